# One job per Mathematics Dataset (split, module): generated shards, or the release imported; then
# one index per split, the one input that stands for its module directories in later jobs.


rule data:
    input:
        *stage_inputs("data", P),
        code=code_digest("data"),
    output:
        *stage_outputs("data"),
    params:
        **settings("data", P),
    log:
        "logs/data/{split}/{module}.log",
    threads: 1
    resources:
        **stage_resources("data", P, workflow),
    conda:
        "../../envs/generate.yaml"
    shell:
        stage_shell("data", P)  # its extrapolate jobs run dvc.yaml's data_extrapolate command


rule split_index:
    input:  # its split's module folders: dvc.yaml names the split's folder, which no job writes as a whole
        lambda wildcards: module_dirs(DATA, [wildcards.split], split_modules(P["grid"], wildcards.split)),
        code=code_digest("split-index"),
    output:
        *stage_outputs("split-index"),
    params:
        **settings("split-index", P),
    log:
        "logs/data/{split}.log",
    localrule: True
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("split-index", P)


rule vocab:
    input:
        *stage_inputs("vocab", P),
        code=code_digest("vocab"),
    output:
        *stage_outputs("vocab"),
    params:
        **settings("vocab", P),
    log:
        "logs/vocab.log",
    resources:
        **stage_resources("vocab", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("vocab", P)
