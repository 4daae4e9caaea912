# The summarization experiment (Jiang et al. 2021): CI corpus -> per dataset: shards + subword model
# -> Transformer / TPT-c / TPT-d training -> beam search + ROUGE -> table and report.
# Settings: params.yaml `summarization:` (its `train:` overrides the top-level one).
from tprepro.experiments.summarization.settings import summarization_train

SUM_TRAIN = summarization_train(P)


rule summarization_corpus:
    input:
        *stage_inputs("summarization-corpus", P),
        code=code_digest("summarization-corpus"),
    output:
        *stage_outputs("summarization-corpus"),
    params:
        **settings("summarization-corpus", P),
    log:
        "logs/summarization/corpus.log",
    resources:
        **stage_resources("summarization-corpus", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-corpus", P)


rule summarization_data:
    input:
        *stage_inputs("summarization-data", P),
        code=code_digest("summarization-data"),
    output:
        *stage_outputs("summarization-data"),
    wildcard_constraints:
        dataset="|".join(P["summarization"]["datasets"]),
    params:
        **settings("summarization-data", P),
    log:
        "logs/summarization/data/{dataset}.log",
    resources:
        **stage_resources("summarization-data", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-data", P)


rule summarization_train:
    input:
        *stage_inputs("summarization-train", P),
        code=code_digest("summarization-train"),
    output:
        *stage_outputs("summarization-train"),
    params:
        **settings("summarization-train", P),
    log:
        "logs/summarization/train/{dataset}/{model}-s{seed}.log",
    threads: max(1, SUM_TRAIN["threads"])
    retries: SUM_TRAIN["max_requeues"]
    resources:
        **stage_resources("summarization-train", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-train", P)


rule summarization_evaluate:
    input:
        *stage_inputs("summarization-evaluate", P),
        code=code_digest("summarization-evaluate"),
    output:
        *stage_outputs("summarization-evaluate"),
    params:
        **settings("summarization-evaluate", P),
    log:
        "logs/summarization/evaluate/{dataset}/{model}-s{seed}.log",
    resources:
        **stage_resources("summarization-evaluate", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-evaluate", P)


rule summarization_tables:
    input:
        *stage_inputs("summarization-tables", P),
        code=code_digest("summarization-tables"),
    output:
        *stage_outputs("summarization-tables"),
    params:
        **settings("summarization-tables", P),
    log:
        "logs/summarization/tables.log",
    resources:
        **stage_resources("summarization-tables", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("summarization-tables", P)
