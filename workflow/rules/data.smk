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
        "tprepro data --split {wildcards.split} --module {wildcards.module}"
        " --out {output} --processes {threads} > {log} 2>&1"


rule vocab:
    input:
        module_dirs(DATA, TRAIN_SPLITS, GRID["modules"]),
        code=code_digest("vocab"),
    output:
        VOCAB,
    params:
        **settings("vocab", P),
        train=TRAIN_DIRS,
    log:
        "logs/vocab.log",
    resources:
        **cluster_resources(P, "vocab", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro vocab --train {params.train} --out {output} > {log} 2>&1"
