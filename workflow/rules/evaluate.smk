# Per-module accuracy of one trained model on interpolate, extrapolate and a train sample.


rule evaluate:
    input:
        model="models/{model}-s{seed}/model.pt",
        metrics="models/{model}-s{seed}/train_metrics.json",
        interpolate=module_dirs(DATA, [INTERPOLATE], GRID["modules"]),
        extrapolate=module_dirs(DATA, [EXTRAPOLATE], GRID["extrapolation_modules"]),
        train=module_dirs(DATA, TRAIN_SPLITS, GRID["modules"]),
        code=code_digest("evaluate"),
    output:
        "results/eval/{model}-s{seed}.csv",
    params:
        **settings("evaluate", P),
        model_dir=lambda wildcards, input: parent(input.model),
        train_dirs=TRAIN_DIRS,
        interpolate=lambda wildcards, input: parent(input.interpolate[0]),
        extrapolate=lambda wildcards, input: parent(input.extrapolate[0]),
    log:
        "logs/evaluate/{model}-s{seed}.log",
    resources:
        **cluster_resources(P, "evaluate", workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        "tprepro evaluate --model-dir {params.model_dir}"
        " --interpolate {params.interpolate} --extrapolate {params.extrapolate}"
        " --train {params.train_dirs} --out {output} > {log} 2>&1"
