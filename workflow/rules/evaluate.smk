# Per-module accuracy of one trained model on interpolate, extrapolate and a train sample.


rule evaluate:
    input:
        *stage_inputs("evaluate", P),
        code=code_digest("evaluate"),
    output:
        *stage_outputs("evaluate"),
    params:
        **settings("evaluate", P),
    log:
        "logs/evaluate/{model}-s{seed}.log",
    resources:
        **stage_resources("evaluate", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("evaluate", P)
