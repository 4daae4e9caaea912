# The papers' interpretation sections (issue 12), after evaluation: attention maps, role clusters,
# head reconstruction, role one-hotness (Mathematics Dataset runs); attention and ponder maps
# (two-variable models); relation-unbinding clusters (TP-N2F). Settings: params.yaml `interpret:`
# (shared, and Mathematics'), `two_variable.interpret` and `n2f.interpret`.
# Each job runs the analyses its model's architecture has, into the run's interpret/ folder of its
# experiment; the head-reconstruction table over the Mathematics runs goes to results/interpret/.

rule interpret_mathematics:
    input:
        *stage_inputs("interpret-mathematics", P),
        code=code_digest("interpret-mathematics"),
    output:
        *stage_outputs("interpret-mathematics"),
    params:
        **settings("interpret-mathematics", P),
    log:
        "logs/interpret/mathematics/{model}-s{seed}.log",
    resources:
        **stage_resources("interpret-mathematics", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-mathematics", P)


rule interpret_reconstruction:
    input:
        *stage_inputs("interpret-reconstruction", P),
        code=code_digest("interpret-reconstruction"),
    output:
        *stage_outputs("interpret-reconstruction"),
    params:
        **settings("interpret-reconstruction", P),
    log:
        "logs/interpret/head_reconstruction.log",
    resources:
        **stage_resources("interpret-reconstruction", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-reconstruction", P)


rule interpret_two_variable:
    input:
        *stage_inputs("interpret-two-variable", P),
        code=code_digest("interpret-two-variable"),
    output:
        *stage_outputs("interpret-two-variable"),
    params:
        **settings("interpret-two-variable", P),
    log:
        "logs/interpret/two_variable/{model}-s{seed}.log",
    resources:
        **stage_resources("interpret-two-variable", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-two-variable", P)


rule interpret_n2f:
    input:
        *stage_inputs("interpret-n2f", P),
        code=code_digest("interpret-n2f"),
    output:
        *stage_outputs("interpret-n2f"),
    params:
        **settings("interpret-n2f", P),
    log:
        "logs/interpret/n2f/{task}.log",
    resources:
        **stage_resources("interpret-n2f", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-n2f", P)
