# One job per Mathematics Dataset (split, module): generated shards, or the release imported.


rule data:
    input:
        code=code_digest("data"),
    output:
        directory(f"{DATA}/{{split}}/{{module}}"),
    params:
        **settings("data", P),
    log:
        "logs/data/{split}/{module}.log",
    threads: 1
    resources:
        **cluster_resources(P, "data", workflow),
    conda:
        "../../envs/generate.yaml"
    shell:
        stage_shell("data", P)  # its extrapolate jobs run dvc.yaml's data_extrapolate command


rule vocab:
    input:
        module_dirs(DATA, TRAIN_SPLITS, GRID["modules"]),
        code=code_digest("vocab"),
    output:
        VOCAB,
    params:
        **settings("vocab", P),
    log:
        "logs/vocab.log",
    resources:
        **cluster_resources(P, "vocab", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("vocab", P)
