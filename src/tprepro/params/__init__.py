"""Load and validate params.yaml, the single source of settings.

Snakemake (workflow/rules/common.smk) and every `tprepro` stage call
`load_params`, so a wrong key or type stops everything with a message that
names the file and the key before any work starts. One job per module:

- `paths`: the default params file, the variable Snakemake's jobs read it from, the resolved overrides' folder;
- `yaml_files`: settings files read strictly (UTF-8, no duplicate keys);
- `rules`: the shared schema and what each experiment registers (its schema, rules, models);
- `validation`: settings checked against both, errors naming the file and key;
- `loading`: a file with the files it extends, validated once per process (`load_params`);
- `overrides`: `--config` overrides and the file a Snakemake run's jobs read;
- `train_config`: the train section as TrainConfig, each setting's resume behaviour beside it;
- `reads`, `references`, `layered`, `memory`: what a command reads, DVC references, shared sections under an
  experiment's overrides, the training memory check.

The names callers use are imported from here.
"""

from tprepro.params.loading import EXTENDS, load_params, merge_overrides
from tprepro.params.overrides import apply_overrides, snakemake_params
from tprepro.params.paths import DEFAULT_PARAMS, PARAMS_ENV, RESOLVED_DIR, default_params_path
from tprepro.params.rules import ExperimentRules, register_rules
from tprepro.params.train_config import TrainConfig
from tprepro.params.validation import (check_train_settings, packing_key, reraise_with_key, resolved_models,
                                       validate_params, validate_section)
from tprepro.params.yaml_files import parse_yaml, read_yaml

__all__ = ["DEFAULT_PARAMS", "EXTENDS", "PARAMS_ENV", "RESOLVED_DIR", "ExperimentRules", "TrainConfig",
           "apply_overrides", "check_train_settings", "default_params_path", "load_params", "merge_overrides",
           "packing_key", "parse_yaml", "read_yaml", "register_rules", "reraise_with_key", "resolved_models",
           "snakemake_params", "validate_params", "validate_section"]
