# The two-variable arithmetic experiment (Wangperawong 2018, Table 3): data ->
# Transformer / UT / AUT training -> per-type test accuracy -> table.
# Settings: params.yaml `two_variable:` (its `train:` overrides the top-level one).
from tprepro.experiments.two_variable.settings import two_variable_train

TV = P["two_variable"]
TV_TRAIN = two_variable_train(P)
TV_DATA = "data/two_variable"
TV_MODELS = list(TV["models"])
TV_RUNS = [f"{model}-s{seed}" for model in TV_MODELS for seed in TV["seeds"]]


rule two_variable_data:
    input:
        code=code_digest("two-variable-data"),
    output:
        train=directory(f"{TV_DATA}/train"),
        test=directory(f"{TV_DATA}/test"),
        vocab=f"{TV_DATA}/vocab.json",
    params:
        **settings("two-variable-data", P),
    log:
        "logs/two_variable/data.log",
    resources:
        **cluster_resources(P, "data", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-data", P)


rule two_variable_train:
    input:
        vocab=rules.two_variable_data.output.vocab,
        train=rules.two_variable_data.output.train,
        heldout=rules.two_variable_data.output.test,  # the learning curve's sample
        code=code_digest("two-variable-train"),
    output:
        model="two_variable/models/{model}-s{seed}/model.pt",
        metrics="two_variable/models/{model}-s{seed}/train_metrics.json",
        curve="two_variable/models/{model}-s{seed}/learning_curve.csv",
    params:
        **settings("two-variable-train", P),
    log:
        "logs/two_variable/train/{model}-s{seed}.log",
    threads: max(1, TV_TRAIN["threads"])
    retries: TV_TRAIN["max_requeues"]
    resources:
        **cluster_resources(P, "train", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-train", P)


rule two_variable_evaluate:
    input:
        model="two_variable/models/{model}-s{seed}/model.pt",
        test=rules.two_variable_data.output.test,
        code=code_digest("two-variable-evaluate"),
    output:
        "two_variable/eval/{model}-s{seed}.csv",
    params:
        **settings("two-variable-evaluate", P),
    log:
        "logs/two_variable/evaluate/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-evaluate", P)


rule two_variable_tables:
    input:
        evals=expand("two_variable/eval/{run}.csv", run=TV_RUNS),
        code=code_digest("two-variable-tables"),
    output:
        csv=report("results/tables/two_variable_types.csv", caption="../report/two_variable.rst",
                   category="Two-variable arithmetic"),
        md="results/tables/two_variable_types.md",
        html=report("results/tables/two_variable_types.html", caption="../report/two_variable.rst",
                    category="Two-variable arithmetic"),
        curves=report("results/figures/two_variable_learning_curves.png",
                      caption="../report/two_variable_curves.rst", category="Two-variable arithmetic"),
        metrics="results/two_variable_metrics.json",
    params:
        **settings("two-variable-tables", P),
    log:
        "logs/two_variable/tables.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-tables", P)
