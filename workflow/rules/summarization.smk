# The summarization experiment (Jiang et al. 2021): CI corpus -> per dataset: shards + subword model
# -> Transformer / TPT-c / TPT-d training -> beam search + ROUGE -> table and report.
# Settings: params.yaml `summarization:` (its `train:` overrides the top-level one).
from tprepro.experiments.summarization import DOCUMENTS_SUFFIX
from tprepro.experiments.summarization.settings import summarization_train

SUM = P["summarization"]
SUM_TRAIN = summarization_train(P)
SUM_DATA = "data/summarization"
SUM_DATASETS = list(SUM["datasets"])
SUM_RUNS = [f"{model}-s{seed}" for model in SUM["models"] for seed in SUM["seeds"]]


rule summarization_corpus:
    input:
        code=code_digest("summarization-corpus"),
    output:
        directory(f"{SUM_DATA}/corpus"),
    params:
        **settings("summarization-corpus", P),
    log:
        "logs/summarization/corpus.log",
    resources:
        **cluster_resources(P, "data", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-corpus", P)


rule summarization_data:
    input:
        corpus=f"{SUM_DATA}/corpus",
        code=code_digest("summarization-data"),
    output:
        directory(f"{SUM_DATA}/{{dataset}}"),
    wildcard_constraints:
        dataset="|".join(SUM_DATASETS),
    params:
        **settings("summarization-data", P),
    log:
        "logs/summarization/data/{dataset}.log",
    resources:
        **cluster_resources(P, "data", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-data", P, key="dataset")


rule summarization_train:
    input:
        data=f"{SUM_DATA}/{{dataset}}",
        code=code_digest("summarization-train"),
    output:
        model="summarization/models/{dataset}/{model}-s{seed}/model.pt",
        metrics="summarization/models/{dataset}/{model}-s{seed}/train_metrics.json",
    params:
        **settings("summarization-train", P),
    log:
        "logs/summarization/train/{dataset}/{model}-s{seed}.log",
    threads: max(1, SUM_TRAIN["threads"])
    retries: SUM_TRAIN["max_requeues"]
    resources:
        **cluster_resources(P, "train", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-train", P)


rule summarization_evaluate:
    input:
        model="summarization/models/{dataset}/{model}-s{seed}/model.pt",
        data=f"{SUM_DATA}/{{dataset}}",
        code=code_digest("summarization-evaluate"),
    output:
        scores="summarization/eval/{dataset}/{model}-s{seed}.csv",
        documents=f"summarization/eval/{{dataset}}/{{model}}-s{{seed}}{DOCUMENTS_SUFFIX}",  # beside the scores
    params:
        **settings("summarization-evaluate", P),
    log:
        "logs/summarization/evaluate/{dataset}/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-evaluate", P)


rule summarization_tables:
    input:
        expand("summarization/eval/{dataset}/{run}.csv", dataset=SUM_DATASETS, run=SUM_RUNS),
        code=code_digest("summarization-tables"),
    output:
        csv=report("results/tables/summarization.csv", caption="../report/summarization.rst",
                   category="Summarization"),
        md="results/tables/summarization.md",
        html=report("results/tables/summarization.html", caption="../report/summarization.rst",
                    category="Summarization"),
        metrics="results/summarization_metrics.json",
    params:
        **settings("summarization-tables", P),
    log:
        "logs/summarization/tables.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-tables", P)
