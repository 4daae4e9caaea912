# Table 1, the per-module table and figure and the learning curves, logged to MLflow.


rule tables:
    input:
        evals=expand(f"{EVALS}/{{run}}.csv", run=RUNS),
        code=code_digest("tables"),
    output:
        modules=report("results/tables/mathematics_modules.csv", caption="../report/modules.rst",
                       category="Mathematics Dataset"),
        table1_csv=report("results/tables/table1.csv", caption="../report/table1.rst",
                          category="Mathematics Dataset"),
        table1_md="results/tables/table1.md",
        table1_html=report("results/tables/table1.html", caption="../report/table1.rst",
                           category="Mathematics Dataset"),
        figure=report("results/figures/mathematics_modules.png", caption="../report/figure.rst",
                      category="Mathematics Dataset"),
        curves=report("results/figures/learning_curves.png", caption="../report/learning_curves.rst",
                      category="Mathematics Dataset"),
        metrics="results/metrics.json",
    params:
        **settings("tables", P),
    log:
        "logs/tables.log",
    resources:
        **cluster_resources(P, "tables", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("tables", P)
