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
        stage_shell("n2f-data", P)


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
        stage_shell("n2f-quality", P)


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
    log:
        "logs/n2f/{task}/train/{model}-s{seed}.log",
    threads: max(1, N2F_TRAIN["threads"])
    retries: N2F_TRAIN["max_requeues"]
    resources:
        **cluster_resources(P, "train", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-train", P)


rule n2f_evaluate:
    input:
        model="n2f/models/{task}/{model}-s{seed}/model.pt",
        test="data/n2f/{task}/test",
        code=code_digest("n2f-evaluate"),
    output:
        "n2f/eval/{task}/{model}-s{seed}.csv",
    params:
        **settings("n2f-evaluate", P),
    log:
        "logs/n2f/{task}/evaluate/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-evaluate", P)


rule n2f_tables:
    input:
        evals=expand("n2f/eval/{{task}}/{run}.csv", run=N2F_RUNS),
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
        stage_shell("n2f-tables", P)
