# Per-module accuracy of one trained model on interpolate, extrapolate and a train sample.


rule evaluate:
    input:
        model="models/{model}-s{seed}/model.pt",
        metrics="models/{model}-s{seed}/train_metrics.json",
        interpolate=split_index(INTERPOLATE),
        extrapolate=split_index(EXTRAPOLATE),
        train=TRAIN_INDEXES,
        code=code_digest("evaluate"),
    output:
        "results/eval/{model}-s{seed}.csv",
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
