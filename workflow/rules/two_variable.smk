# The two-variable arithmetic experiment (Wangperawong 2018, Table 3): data ->
# Transformer / UT / AUT training -> per-type test accuracy -> table.
# Settings: params.yaml `two_variable:` (its `train:` overrides the top-level one).
from tprepro.experiments.two_variable.settings import two_variable_train

TV_TRAIN = two_variable_train(P)


rule two_variable_data:
    input:
        *stage_inputs("two-variable-data", P),
        code=code_digest("two-variable-data"),
    output:
        *stage_outputs("two-variable-data"),
    params:
        **settings("two-variable-data", P),
    log:
        "logs/two_variable/data.log",
    resources:
        **stage_resources("two-variable-data", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-data", P)


rule two_variable_train:
    input:
        *stage_inputs("two-variable-train", P),
        code=code_digest("two-variable-train"),
    output:
        *stage_outputs("two-variable-train"),
    params:
        **settings("two-variable-train", P),
    log:
        "logs/two_variable/train/{model}-s{seed}.log",
    threads: max(1, TV_TRAIN["threads"])
    retries: TV_TRAIN["max_requeues"]
    resources:
        **stage_resources("two-variable-train", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-train", P)


rule two_variable_evaluate:
    input:
        *stage_inputs("two-variable-evaluate", P),
        code=code_digest("two-variable-evaluate"),
    output:
        *stage_outputs("two-variable-evaluate"),
    params:
        **settings("two-variable-evaluate", P),
    log:
        "logs/two_variable/evaluate/{model}-s{seed}.log",
    resources:
        **stage_resources("two-variable-evaluate", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-evaluate", P)


rule two_variable_tables:
    input:
        *stage_inputs("two-variable-tables", P),
        code=code_digest("two-variable-tables"),
    output:
        *stage_outputs("two-variable-tables"),
    params:
        **settings("two-variable-tables", P),
    log:
        "logs/two_variable/tables.log",
    resources:
        **stage_resources("two-variable-tables", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("two-variable-tables", P)
