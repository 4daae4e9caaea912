# The TP-N2F experiments (Chen et al. 2020): per task in n2f.tasks (mathqa: Table 1,
# algolisp: Table 2): data -> gold-program quality -> train / evaluate every model in
# n2f.models -> the task's table. Settings: params.yaml `n2f:` (its `train:` overrides
# the top-level one, and `n2f.<task>.train` both).
from tprepro.experiments.n2f.settings import listed_task, n2f_train

N2F_TRAIN = n2f_train(P)


wildcard_constraints:
    task="mathqa|algolisp",


rule n2f_data:
    input:
        *stage_inputs("n2f-data", P),
        code=code_digest("n2f-data"),
        listed=listed_task(P, PARAMS_FILE),  # no file: stops the plan of an unlisted task's target
    output:
        *stage_outputs("n2f-data"),
    params:
        **settings("n2f-data", P),
    log:
        "logs/n2f/{task}/data.log",
    resources:
        **stage_resources("n2f-data", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-data", P)


rule n2f_quality:
    input:
        *stage_inputs("n2f-quality", P),
        code=code_digest("n2f-quality"),
    output:
        *stage_outputs("n2f-quality"),
    params:
        **settings("n2f-quality", P),
    log:
        "logs/n2f/{task}/quality.log",
    resources:
        **stage_resources("n2f-quality", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-quality", P)


rule n2f_train:
    input:
        *stage_inputs("n2f-train", P),
        code=code_digest("n2f-train"),
    output:
        *stage_outputs("n2f-train"),
    params:
        **settings("n2f-train", P),
    log:
        "logs/n2f/{task}/train/{model}-s{seed}.log",
    threads: max(1, N2F_TRAIN["threads"])
    retries: N2F_TRAIN["max_requeues"]
    resources:
        **stage_resources("n2f-train", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-train", P)


rule n2f_evaluate:
    input:
        *stage_inputs("n2f-evaluate", P),
        code=code_digest("n2f-evaluate"),
    output:
        *stage_outputs("n2f-evaluate"),
    params:
        **settings("n2f-evaluate", P),
    log:
        "logs/n2f/{task}/evaluate/{model}-s{seed}.log",
    resources:
        **stage_resources("n2f-evaluate", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-evaluate", P)


rule n2f_tables:
    input:
        *stage_inputs("n2f-tables", P),
        code=code_digest("n2f-tables"),
    output:
        *stage_outputs("n2f-tables"),
    params:
        **settings("n2f-tables", P),
    log:
        "logs/n2f/{task}/tables.log",
    resources:
        **stage_resources("n2f-tables", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("n2f-tables", P)
