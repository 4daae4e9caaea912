"""Load and validate params.yaml, the single source of settings.

Snakemake (workflow/rules/common.smk) and every `tprepro` stage call
`load_params`, so a wrong key or type stops everything with a message that
names the file and the key before any work starts.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import jsonschema
import yaml

from tprepro.errors import TpreproError, suggestion
from tprepro.params.train_config import TrainConfig  # noqa: F401 (callers import the train section from here)

DEFAULT_PARAMS = "params.yaml"
# Snakemake points its jobs at the params file it resolved (--config params=FILE, key=value overrides)
# through this variable; the `--params` option of every stage defaults to it, then to params.yaml.
PARAMS_ENV = "TPREPRO_PARAMS"
RESOLVED_DIR = ".snakemake/tprepro"  # params-<digest>.yaml: the settings of a Snakemake run with --config overrides


def default_params_path() -> str:
    return os.environ.get(PARAMS_ENV) or DEFAULT_PARAMS


@functools.cache
def _shared_schema() -> dict:
    """The schema of the shared sections, read once per process."""
    text = resources.files("tprepro.params").joinpath("schema.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=_UniqueKeyLoader)


def _schema() -> dict:
    """The params schema: the shared sections and every registered experiment's (callers must not
    mutate it)."""
    return _merged_schema(tuple(_RULES))


@functools.cache
def _merged_schema(experiments: tuple[str, ...]) -> dict:
    schema = copy.deepcopy(_shared_schema())
    for name in experiments:
        own = _RULES[name].schema
        for section in own.get("properties", {}):
            if section in schema["properties"]:
                raise ValueError(f"experiment {name}: params section {section!r} is declared twice")
        schema["properties"].update(own.get("properties", {}))
        schema["required"] = [*schema["required"], *own.get("properties", {})]
        schema["$defs"].update(own.get("$defs", {}))
    return schema


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
    schema = _schema()
    _first_error({"$defs": schema["$defs"], **schema["properties"][name]}, value, source, [name])
    if name == "data" and value["source"] == "release" and not value["release_root"]:
        raise TpreproError(f"{source}: data.release_root: required when data.source is 'release'")
    return value


@dataclass(frozen=True)
class ExperimentRules:
    """What an experiment tells the core about its settings (registered by the experiment registry,
    tprepro.experiments, when the experiments are listed: the core imports no experiment)."""

    check: Callable[[dict, str], None]  # cross-key rules of its sections; raises TpreproError naming the key
    models: Callable[[dict], dict[str, list[str]]]  # {dotted path of a models mapping: the names it builds}
    # JSON Schema of its own params sections ({"properties": {section: schema}, "$defs": {...}}),
    # merged into the shared schema; every section it names is required.
    schema: dict = field(default_factory=dict)


_RULES: dict[str, ExperimentRules] = {}


def register_rules(experiment: str, rules: ExperimentRules) -> None:
    _RULES[experiment] = rules


def validate_params(params: Any, source: str = DEFAULT_PARAMS, models: bool = True) -> dict:
    """Check `params` against the schema, the shared rules and every registered experiment's rules.

    models: also resolve every model's preset and overrides (needs torch; the data stage,
    which runs in the generation venv without torch, passes False).
    """
    if not _RULES:
        raise RuntimeError("no experiment's settings rules are registered: list the experiments first "
                           "(tprepro.experiments.experiments())")
    if not isinstance(params, dict):
        raise TpreproError(f"{source}: expected a mapping at the top level")
    _check_finite(params, source, [])
    _first_error(_schema(), params, source, [])
    validate_section("data", params["data"], source)
    for rules in _RULES.values():
        rules.check(params, source)
    if models:
        _check_models(params, source)
    return params


def check_train_settings(train: dict, source: str, key: str) -> None:
    """Merged train settings (an experiment's `train` on top of the shared one) against the
    `train` schema; errors name `key`, e.g. "two_variable.train"."""
    schema = _schema()
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

    built = {section: names for rules in _RULES.values() for section, names in rules.models(params).items()}
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


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last) and reads
    YAML 1.2 floats written without a dot (`5e-4`, `1E3`) as numbers, as DVC's YAML 1.2 reader does
    (PyYAML's YAML 1.1 rules would make them strings)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: let PyYAML report it
                continue
            if first is not key_node:
                raise TpreproError(
                    f"{self.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                    f"(first given on line {first.start_mark.line + 1})"
                )
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML settings file strictly: UTF-8 only, no duplicate keys; errors name the file."""
    return parse_yaml(_read_bytes(path), path)


def _read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise TpreproError(f"{path}: params file not found") from exc
    except OSError as exc:
        raise TpreproError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def parse_yaml(data: bytes, path: str | Path) -> Any:
    """The settings in `data`, the bytes of the file `path` (named in errors); see read_yaml."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TpreproError(f"{path}: line {line}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from exc
    loader = _UniqueKeyLoader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise TpreproError(f"{path}: not valid YAML ({exc})") from exc
    finally:
        loader.dispose()


EXTENDS = "extends"  # a params file's key naming the file it overlays (a path relative to it)


def load_params(path: str | Path = DEFAULT_PARAMS, models: bool = True) -> dict:
    """Read and validate a params file; errors name the file and the key.

    The one validation path: Snakemake (at parse time), DVC's stages and `tprepro validate`
    all call this. models=False skips the model checks (see validate_params). A file is validated
    once per process while its bytes (and its base's) stay the same; each call returns its own copy.
    A file with `extends: BASE` is BASE (a path relative to the file) with the file's sections
    deep-merged over it (workflow/configs/rehearsal.yaml: paper.yaml at small sizes).
    """
    from tprepro.params.reads import recorded, validating

    with validating():
        valid = _validated(str(path), tuple(_file_chain(Path(path))), models)
    return recorded(copy.deepcopy(valid))


def _file_chain(path: Path, seen: tuple[Path, ...] = ()) -> list[tuple[str, bytes]]:
    """(path, bytes) of `path` and, after it, of each file it extends."""
    data = _read_bytes(path)
    base = _extended(parse_yaml(data, path), path) if f"{EXTENDS}:".encode() in data else None
    if base is None:
        return [(str(path), data)]
    if base.resolve() in seen or base.resolve() == path.resolve():
        raise TpreproError(f"{path}: {EXTENDS}: {base} extends this file again (a loop)")
    return [(str(path), data), *_file_chain(base, (*seen, path.resolve()))]


def _extended(settings: Any, path: Path) -> Path | None:
    """The base file a params file names in `extends`, or None."""
    if not isinstance(settings, dict) or EXTENDS not in settings:
        return None
    base = settings[EXTENDS]
    if not isinstance(base, str) or not base:
        raise TpreproError(f"{path}: {EXTENDS}: expected the path of a params file, got {base!r}")
    return path.parent / base


@functools.lru_cache(maxsize=8)
def _validated(path: str, chain: tuple[tuple[str, bytes], ...], models: bool) -> dict:
    """The validated params of the file `path` whose chain of (file, bytes) is `chain` (the cache key:
    an edit of the file or of a base revalidates)."""
    merged: dict = {}
    for name, data in reversed(chain):
        settings = parse_yaml(data, name)
        if isinstance(settings, dict):
            settings = {key: value for key, value in settings.items() if key != EXTENDS}
        merged = merge_overrides(merged, settings) if merged and isinstance(settings, dict) else settings
    source = path if len(chain) == 1 else f"{path} (extending {', '.join(name for name, _ in chain[1:])})"
    return validate_params(merged, source, models=models)


def merge_overrides(base: dict, override: dict) -> dict:
    """Deep-merge `override` into a copy of `base` (for overlay configs)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_overrides(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _typed(value: Any) -> Any:
    """Snakemake reads `--config key={a: 1}` with YAML's BaseLoader (every scalar a string): type them."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return yaml.load(value, Loader=_UniqueKeyLoader) if isinstance(value, str) else value


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
