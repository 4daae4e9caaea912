# The papers' interpretation sections (issue 12), after evaluation: attention maps, role clusters,
# head reconstruction, role one-hotness (Mathematics Dataset runs); attention and ponder maps
# (two-variable models); relation-unbinding clusters (TP-N2F). Settings: params.yaml `interpret:`
# (shared, and Mathematics'), `two_variable.interpret` and `n2f.interpret`.
# Each job runs the analyses its model's architecture has, into the run's interpret/ folder of its
# experiment; the head-reconstruction table over the Mathematics runs goes to results/interpret/.
INTERPRET = P["interpret"]
UNBINDING_RUN = f"{N2F['interpret']['unbinding']['model']}-s{N2F['seeds'][0]}"  # the first seed's model


rule interpret_mathematics:
    input:
        model=f"{MODELS}/{{model}}-s{{seed}}/model.pt",
        evaluation=f"{EVALS}/{{model}}-s{{seed}}.csv",
        data=f"{DATA}/{INTERPOLATE}/{INTERPRET['module']}",
        code=code_digest("interpret-mathematics"),
    output:
        report(directory(f"{INTERPRETED}/{{model}}-s{{seed}}"), patterns=["{name}.png"],
               caption="../report/interpret_mathematics.rst", category="Interpretation"),
    params:
        **settings("interpret-mathematics", P),
    log:
        "logs/interpret/mathematics/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-mathematics", P)


rule interpret_reconstruction:
    input:
        expand(f"{INTERPRETED}/{{run}}", run=RUNS),
        code=code_digest("interpret-reconstruction"),
    output:
        csv=report("results/interpret/head_reconstruction.csv", caption="../report/head_reconstruction.rst",
                   category="Interpretation"),
        md="results/interpret/head_reconstruction.md",
        png=report("results/interpret/head_reconstruction.png", caption="../report/head_reconstruction.rst",
                   category="Interpretation"),
    params:
        **settings("interpret-reconstruction", P),
    log:
        "logs/interpret/head_reconstruction.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-reconstruction", P)


rule interpret_two_variable:
    input:
        model="two_variable/models/{model}-s{seed}/model.pt",
        evaluation="two_variable/eval/{model}-s{seed}.csv",
        test=rules.two_variable_data.output.test,
        code=code_digest("interpret-two-variable"),
    output:
        report(directory("two_variable/interpret/{model}-s{seed}"), patterns=["{name}.png"],
               caption="../report/interpret_two_variable.rst", category="Interpretation"),
    params:
        **settings("interpret-two-variable", P),
    log:
        "logs/interpret/two_variable/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-two-variable", P)


rule interpret_n2f:
    input:
        model=f"n2f/models/{{task}}/{UNBINDING_RUN}/model.pt",
        evaluation=f"n2f/eval/{{task}}/{UNBINDING_RUN}.csv",
        test="data/n2f/{task}/test",
        code=code_digest("interpret-n2f"),
    output:
        report(directory("n2f/interpret/{task}"), patterns=["{name}.png"],
               caption="../report/interpret_n2f.rst", category="Interpretation"),
    params:
        **settings("interpret-n2f", P),
    log:
        "logs/interpret/n2f/{task}.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("interpret-n2f", P)
