"""Settings checked against the schema and the experiments' rules; every error names the file and the key."""

from __future__ import annotations

import math
from typing import Any, Callable

import jsonschema

from tprepro.errors import TpreproError, suggestion
from tprepro.params.paths import DEFAULT_PARAMS
from tprepro.params.rules import RULES, params_schema


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties":
        # Name the offending key itself, not only its parent.
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        parts.append(",".join(extra))
    elif error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        parts.append(",".join(missing))
    return ".".join(parts) or "<top level>"


def _first_error(schema: dict, value: Any, source: str, prefix: list[str]) -> None:
    errors = jsonschema.Draft202012Validator(schema).iter_errors(value)
    first = min(errors, key=lambda e: list(map(str, e.absolute_path)), default=None)
    if first is not None:
        key = _key_path(first)
        key = ".".join(prefix + ([] if key == "<top level>" else [key])) or key
        hint = ""
        if first.validator == "additionalProperties":  # a misspelt key: name the closest known one
            known = first.schema.get("properties", {})
            hint = "".join(suggestion(extra, known) for extra in sorted(set(first.instance) - set(known)))[:200]
        elif first.validator == "required" and isinstance(first.instance, dict):  # misspelt: `preest:` for `preset:`
            missing = [k for k in first.validator_value if k not in first.instance]
            given = [k for k in first.instance if k not in first.schema.get("properties", {})]
            hint = "".join(_given_for(key, given) for key in missing)[:200]
        raise TpreproError(f"{source}: {key}: {first.message}{hint}")


def _given_for(missing: str, given) -> str:
    """"; 'preest' is given: did you mean 'preset'?" when a given key is close to the missing `missing`."""
    close = suggestion(missing, given)
    return f"; {close.removeprefix('; did you mean ').rstrip('?')} is given: did you mean {missing!r}?" if close else ""


def validate_section(name: str, value: Any, source: str = DEFAULT_PARAMS) -> dict:
    """Check one section (e.g. the `data:` settings handed to a subprocess) against its schema."""
    schema = params_schema()
    _first_error({"$defs": schema["$defs"], **schema["properties"][name]}, value, source, [name])
    if name == "data" and value["source"] == "release" and not value["release_root"]:
        raise TpreproError(f"{source}: data.release_root: required when data.source is 'release'")
    return value


def validate_params(params: Any, source: str = DEFAULT_PARAMS, models: bool = True) -> dict:
    """Check `params` against the schema, the shared rules and every registered experiment's rules.

    models: also resolve every model's preset and overrides (needs torch; the data stage,
    which runs in the generation venv without torch, passes False).
    """
    if not RULES:
        raise RuntimeError("no experiment's settings rules are registered: list the experiments first "
                           "(tprepro.experiments.experiments())")
    if not isinstance(params, dict):
        raise TpreproError(f"{source}: expected a mapping at the top level")
    _check_finite(params, source, [])
    _first_error(params_schema(), params, source, [])
    validate_section("data", params["data"], source)
    for rules in RULES.values():
        rules.check(params, source)
    if models:
        _check_models(params, source)
    return params


def check_train_settings(train: dict, source: str, key: str) -> None:
    """Merged train settings (an experiment's `train` on top of the shared one) against the
    `train` schema; errors name `key`, e.g. "two_variable.train"."""
    schema = params_schema()
    _first_error({"$defs": schema["$defs"], **schema["properties"]["train"]}, train, source, key.split("."))


def _check_finite(value: Any, source: str, path: list[str]) -> None:
    """No setting may be .inf or .nan (YAML reads both as floats that pass numeric bounds)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise TpreproError(f"{source}: {'.'.join(path) or '<top level>'}: expected a finite number, got {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, source, [*path, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, source, [*path, str(index)])


def _check_models(params: dict, source: str) -> None:
    """Every model the pipeline will build: a known preset and known, well-typed overrides, and an
    estimate of its training memory within the device's (params/memory.py)."""
    from tprepro.params.memory import check_fits, section_tokens, section_train

    from tprepro.models.registry import arch_packs

    for section, name, cfg in resolved_models(params, source):
        train, train_key = section_train(params, section)
        if train.get("packing") and not arch_packs(cfg.arch):
            experiment = section.split(".")[0] if "." in section else "mathematics"
            raise TpreproError(f"{source}: {packing_key(params, section)}: true for the {experiment} experiment's "
                               f"{section}.{name}, whose {cfg.arch} architecture cannot read packed rows; "
                               f"set packing: false in its train section")
        check_fits(cfg, f"{section}.{name}", train, train_key, section_tokens(params, section), source,
                   cluster=params.get("cluster"))


def packing_key(params: dict, section: str) -> str:
    """The params key that sets `train.packing` for the models of `section` (the innermost train section
    naming it: "summarization.train.packing", or the shared "train.packing")."""
    parts, key = section.split(".")[:-1], "train.packing"
    for end in range(len(parts) + 1):
        train = params
        for part in [*parts[:end], "train"]:
            train = train.get(part) if isinstance(train, dict) else None
        if isinstance(train, dict) and "packing" in train:
            key = ".".join([*parts[:end], "train", "packing"])
    return key


def resolved_models(params: dict, source: str = DEFAULT_PARAMS) -> list[tuple[str, str, Any]]:
    """(models section, name, ModelConfig) of every model the pipeline will build; a bad preset or
    override is an error naming the file and key."""
    from tprepro.models.registry import resolve_model_config

    built = {section: names for rules in RULES.values() for section, names in rules.models(params).items()}
    resolved = []
    for section, names in built.items():
        models = params
        for key in section.split("."):
            models = models[key]
        for name in names:
            entry = dict(models[name])
            preset = entry.pop("preset")
            reraise_with_key(lambda: resolved.append(
                (section, name, resolve_model_config(preset, entry, where=f"{section}.{name}"))), source)
    return resolved


def reraise_with_key(check: Callable[[], Any], prefix: str) -> None:
    """Run `check`; a TpreproError it raises is raised again with `prefix` (file and key) in front."""
    try:
        check()
    except TpreproError as exc:
        raise TpreproError(f"{prefix}: {exc}") from exc
