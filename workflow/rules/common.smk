# Settings and paths shared by every rule.
# `--config params=FILE` selects another params file; `--config 'train={steps: 10}'` (any section,
# YAML) overrides those settings, validated like the file (tprepro.params.snakemake_params).
from tprepro.experiments.mathematics.cli import DATA
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, split_modules
from tprepro.params import snakemake_params
from tprepro.workflow import (code_digest, final_outputs, jobs_use_this_interpreter, module_dirs, settings,
                              settle_output_times, stage_inputs, stage_outputs, stage_resources, stage_shell)

jobs_use_this_interpreter()  # `.venv/bin/snakemake` runs .venv's tprepro, whatever PATH holds
PARAMS_FILE, P = snakemake_params(config)  # stops here, naming the key, if the settings are invalid
settle_output_times(P, workflow)  # reruns follow content, as DVC's do: a byte-identical rewrite keeps its time
# Each rule takes from its stage's declaration (tprepro.experiments, the one dvc.yaml is generated from)
# its data inputs (stage_inputs: one file per upstream job, so a job listing stays short), its code
# (code_digest), outputs (stage_outputs, with the report's captions), params values (settings) and
# command (stage_shell); it adds what only Snakemake has: wildcards, log, threads, resources, conda.


wildcard_constraints:
    split="|".join([*TRAIN_SPLITS, INTERPOLATE, EXTRAPOLATE]),
    module=r"[A-Za-z0-9_]+",
    model=r"[A-Za-z0-9_]+",
    seed=r"\d+",
