# Table 1, the per-module table and figure and the learning curves, logged to MLflow.


rule tables:
    input:
        *stage_inputs("tables", P),
        code=code_digest("tables"),
    output:
        *stage_outputs("tables"),
    params:
        **settings("tables", P),
    log:
        "logs/tables.log",
    resources:
        **stage_resources("tables", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("tables", P)
