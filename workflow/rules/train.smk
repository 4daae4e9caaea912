# One training job per (model, seed); it resumes from mathematics/checkpoints/<run>/ if interrupted.
# A preempted job (SIGTERM / SLURM's USR1 warning) checkpoints and exits with
# status 75 (tprepro.train.preemption.REQUEUE_EXIT); `retries:` re-runs it. Any other
# failure is not retried: later attempts of the invocation exit at once with the
# recorded status (tprepro.train.requeue; also for the two-variable and N2F train rules).


rule train:
    input:
        *stage_inputs("train", P),
        code=code_digest("train"),
    output:
        *stage_outputs("train"),
    params:
        **settings("train", P),  # models.{model}: editing another model reruns not this one
    log:
        "logs/train/{model}-s{seed}.log",
    threads: max(1, P["train"]["threads"])
    retries: P["train"]["max_requeues"]
    resources:
        **stage_resources("train", P, workflow),
    conda:
        "../../envs/torch.yaml"
    shell:
        stage_shell("train", P)
