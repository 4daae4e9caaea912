# results/report.html: every experiment's tables and figures under their captions (the report stage).


rule report:
    input:
        *stage_inputs("report", P),
        code=code_digest("report"),
    output:
        *stage_outputs("report"),
    params:
        **settings("report", P),
    log:
        "logs/report.log",
    localrule: True  # seconds of reading files: where Snakemake runs, also under the slurm profile
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("report", P)
