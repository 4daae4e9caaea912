# The TP-N2F experiments (Chen et al. 2020): per task in n2f.tasks (mathqa: Table 1,
# algolisp: Table 2): data -> gold-program quality -> train / evaluate every model in
# n2f.models -> the task's table. Settings: params.yaml `n2f:` (its `train:` overrides
# the top-level one, and `n2f.<task>.train` both).
from tprepro.experiments.n2f.settings import n2f_train

N2F = P["n2f"]
N2F_TRAIN = n2f_train(P)
N2F_TASKS = N2F["tasks"]
N2F_MODELS = N2F["models"]
N2F_RUNS = [f"{model}-s{seed}" for model in N2F_MODELS for seed in N2F["seeds"]]


wildcard_constraints:
    task="mathqa|algolisp",


rule n2f_data:
    input:
        code=code_digest("n2f-data"),
    output:
        train=directory("data/n2f/{task}/train"),
        test=directory("data/n2f/{task}/test"),
        vocab="data/n2f/{task}/vocab.json",
    params:
        **settings("n2f-data", P),
    log:
        "logs/n2f/{task}/data.log",
    resources:
        **cluster_resources(P, "data", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro n2f-data --task {wildcards.task} --out data/n2f/{wildcards.task}"
        " > {log} 2>&1"


rule n2f_quality:
    input:
        train="data/n2f/{task}/train",
        test="data/n2f/{task}/test",
        code=code_digest("n2f-quality"),
    output:
        "results/n2f/{task}_quality.json",
    params:
        **settings("n2f-quality", P),
    log:
        "logs/n2f/{task}/quality.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro n2f-quality --task {wildcards.task} --data data/n2f/{wildcards.task}"
        " --out {output} > {log} 2>&1"


rule n2f_train:
    input:
        train="data/n2f/{task}/train",
        vocab="data/n2f/{task}/vocab.json",
        code=code_digest("n2f-train"),
    output:
        model="n2f/models/{task}/{model}-s{seed}/model.pt",
        metrics="n2f/models/{task}/{model}-s{seed}/train_metrics.json",
    params:
        **settings("n2f-train", P),
        out="n2f/models/{task}/{model}-s{seed}",
        checkpoints="n2f/checkpoints/{task}/{model}-s{seed}",
    log:
        "logs/n2f/{task}/train/{model}-s{seed}.log",
    threads: max(1, N2F_TRAIN["threads"])
    retries: N2F_TRAIN["max_requeues"]
    resources:
        **cluster_resources(P, "train", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro n2f-train --task {wildcards.task} --model {wildcards.model} --seed {wildcards.seed}"
        " --train {input.train} --vocab {input.vocab} --out {params.out} --checkpoints {params.checkpoints}"
        " > {log} 2>&1"


rule n2f_evaluate:
    input:
        model="n2f/models/{task}/{run}/model.pt",
        metrics="n2f/models/{task}/{run}/train_metrics.json",
        test="data/n2f/{task}/test",
        code=code_digest("n2f-evaluate"),
    output:
        "n2f/eval/{task}/{run}.csv",
    params:
        **settings("n2f-evaluate", P),
        model_dir=lambda wildcards, input: parent(input.model),
    log:
        "logs/n2f/{task}/evaluate/{run}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro n2f-evaluate --task {wildcards.task} --model-dir {params.model_dir}"
        " --test {input.test} --out {output} > {log} 2>&1"


rule n2f_tables:
    input:
        evals=expand("n2f/eval/{{task}}/{run}.csv", run=N2F_RUNS),
        metrics=expand("n2f/models/{{task}}/{run}/train_metrics.json", run=N2F_RUNS),
        quality="results/n2f/{task}_quality.json",
        code=code_digest("n2f-tables"),
    output:
        csv=report("results/tables/{task}.csv", caption="../report/n2f.rst", category="TP-N2F"),
        md="results/tables/{task}.md",
        html=report("results/tables/{task}.html", caption="../report/n2f.rst", category="TP-N2F"),
        metrics="results/{task}_metrics.json",
    params:
        **settings("n2f-tables", P),
    log:
        "logs/n2f/{task}/tables.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro n2f-tables --task {wildcards.task} --eval-dir n2f/eval/{wildcards.task}"
        " --models-dir n2f/models/{wildcards.task} --table-csv {output.csv} --table-md {output.md}"
        " --table-html {output.html} --metrics {output.metrics}"
        " > {log} 2>&1"
