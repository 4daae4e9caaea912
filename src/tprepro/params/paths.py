"""Where the settings are: the default params file, the variable Snakemake points its jobs at, and the folder of the
settings a Snakemake run with --config overrides resolved."""

from __future__ import annotations

import os

DEFAULT_PARAMS = "params.yaml"

# Snakemake points its jobs at the params file it resolved (--config params=FILE, key=value overrides)
# through this variable; the `--params` option of every stage defaults to it, then to params.yaml.
PARAMS_ENV = "TPREPRO_PARAMS"

RESOLVED_DIR = ".snakemake/tprepro"  # params-<digest>.yaml: the settings of a Snakemake run with --config overrides


def default_params_path() -> str:
    return os.environ.get(PARAMS_ENV) or DEFAULT_PARAMS
