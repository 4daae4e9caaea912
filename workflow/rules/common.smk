# Settings and paths shared by every rule.
# `--config params=FILE` selects another params file; `--config 'train={steps: 10}'` (any section,
# YAML) overrides those settings, validated like the file (tprepro.params.snakemake_params).
from tprepro.experiments.mathematics.cli import DATA, EVALS, INTERPRETED, MODELS, TRAIN_INDEXES, VOCAB, split_index
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, split_modules
from tprepro.params import snakemake_params
from tprepro.workflow import cluster_resources, code_digest, module_dirs, settings, stage_shell

PARAMS_FILE, P = snakemake_params(config)  # stops here, naming the key, if the settings are invalid
GRID = P["grid"]

RUNS = [f"{model}-s{seed}" for model in GRID["models"] for seed in GRID["seeds"]]
# A job's input names one file per upstream job, so its listing stays short: a run's model.pt stands
# for all its train job writes (train_metrics.json, learning_curve.csv), an evaluation for its run.
# dvc.yaml lists every file (DVC has no job listing to keep short).


wildcard_constraints:
    split="|".join([*TRAIN_SPLITS, INTERPOLATE, EXTRAPOLATE]),
    module=r"[A-Za-z0-9_]+",
    model=r"[A-Za-z0-9_]+",
    seed=r"\d+",
