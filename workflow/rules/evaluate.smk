# Per-module accuracy of one trained model on interpolate, extrapolate and a train sample.


rule evaluate:
    input:
        model=f"{MODELS}/{{model}}-s{{seed}}/model.pt",
        interpolate=split_index(INTERPOLATE),
        extrapolate=split_index(EXTRAPOLATE),
        train=TRAIN_INDEXES,
        code=code_digest("evaluate"),
    output:
        f"{EVALS}/{{model}}-s{{seed}}.csv",
    params:
        **settings("evaluate", P),
    log:
        "logs/evaluate/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("evaluate", P)
