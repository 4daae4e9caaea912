"""Settings overridden for one invocation: `--config` keys and sections on the command line, the resolved file a
Snakemake run's jobs read."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path
from typing import Any

import yaml

from tprepro.errors import TpreproError
from tprepro.params.loading import load_params, merge_overrides
from tprepro.params.paths import DEFAULT_PARAMS, PARAMS_ENV, RESOLVED_DIR
from tprepro.params.validation import validate_params
from tprepro.params.yaml_files import UniqueKeyLoader


def _typed(value: Any) -> Any:
    """Snakemake reads `--config key={a: 1}` with YAML's BaseLoader (every scalar a string): type them."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return yaml.load(value, Loader=UniqueKeyLoader) if isinstance(value, str) else value


def apply_overrides(params: dict, overrides: dict) -> dict:
    """A copy of `params` with overrides applied: a section's mapping is deep-merged
    ({"train": {"steps": 10}}), a dotted key sets one value ({"train.steps": 10})."""
    merged = copy.deepcopy(params)
    for dotted, value in overrides.items():
        value = _typed(value)
        *parents, leaf = dotted.split(".")
        node = merged
        for key in parents:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise TpreproError(f"--config {dotted}: {key} is not a section")
        node[leaf] = merge_overrides(node[leaf], value) if isinstance(value, dict) and isinstance(
            node.get(leaf), dict) else copy.deepcopy(value)
    return merged


def snakemake_params(config: dict) -> tuple[str, dict]:
    """The params file and validated settings of a Snakemake invocation, exported to its jobs.

    `--config params=FILE` picks the file; any other `--config section={key: value}` (YAML)
    overrides those keys of that section. With overrides the merged settings are validated like a file
    (errors name the key) and written to `RESOLVED_DIR/params-<digest>.yaml`, named by their content:
    another invocation with other overrides (a dry run beside a running one, say) writes a file of its
    own and never changes the settings a running job reads. DVC keeps reading params.yaml.
    """
    from tprepro.io import atomic_write_text

    path = str(config.get("params", DEFAULT_PARAMS))
    params = load_params(path)
    overrides = {key: value for key, value in config.items() if key != "params"}
    if overrides:
        source = f"{path} with --config {' '.join(sorted(overrides))}"
        params = validate_params(apply_overrides(params, overrides), source)
        body = yaml.safe_dump(params, sort_keys=False)
        path = f"{RESOLVED_DIR}/params-{hashlib.sha256(body.encode()).hexdigest()[:16]}.yaml"
        if not Path(path).is_file():  # same settings, same file: written once, never rewritten
            atomic_write_text(path, f"# {source}\n" + body)
    os.environ[PARAMS_ENV] = path
    return path, params
