"""Registries of model builders (archs) and named presets (fairseq-style named architectures).

The presets are registered beside their models (transformer.py, universal.py, lstm.py, n2f.py)
from the shared size blocks in config.py; importing `tprepro.models` registers them all.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable

from torch import nn

from tprepro.errors import TpreproError, unknown
from tprepro.models.config import ModelConfig

# A builder is called as builder(cfg, vocab_size, pad_id, **sizes) and returns the model. Sequence
# archs (task "seq2seq") take no extra sizes; tuple archs (task "n2f") take n_relations, n_arguments.
Builder = Callable[..., nn.Module]
TASKS = ("seq2seq", "n2f")

_ARCHS: dict[str, Builder] = {}
_ARCH_TASKS: dict[str, str] = {}
_ARCH_SETTINGS: dict[str, tuple[str, ...]] = {}
_PRESETS: dict[str, dict] = {}

# The ModelConfig fields every arch reads, and those a binding adds (binding.py).
CORE_SETTINGS = ("arch", "d_model", "dropout", "init")
BINDING_SETTINGS = {"discrete_role": ("n_roles", "d_role"), "full_tensor": ("d_role",)}


def register_arch(name: str, task: str = "seq2seq", settings: tuple[str, ...] = ()) -> Callable[[Builder], Builder]:
    """Decorator: register a model class or builder function under `name` (config field `arch`).

    `task` says which data the arch models, hence which sizes its builder takes: "seq2seq"
    (token sequences; builder(cfg, vocab_size, pad_id)) or "n2f" (relational-tuple programs;
    builder(cfg, vocab_size, pad_id, n_relations=..., n_arguments=...)). `settings`: the
    ModelConfig fields the arch reads beyond CORE_SETTINGS (what its runs record).
    """
    unknown_fields = sorted(set(settings) - {f.name for f in dataclasses.fields(ModelConfig)})
    if unknown_fields:
        raise ValueError(f"arch {name!r}: unknown settings {unknown_fields}")
    if task not in TASKS:
        raise ValueError(f"arch {name!r}: unknown task {task!r}; known: {', '.join(TASKS)}")

    def decorate(builder: Builder) -> Builder:
        if name in _ARCHS:
            raise ValueError(f"arch {name!r} is already registered")
        _ARCHS[name] = builder
        _ARCH_TASKS[name] = task
        _ARCH_SETTINGS[name] = tuple(settings)
        return builder

    return decorate


def arch_task(name: str) -> str:
    """The task ("seq2seq" or "n2f") arch `name` was registered for."""
    return _ARCH_TASKS[name]


def arch_settings(cfg: ModelConfig) -> dict:
    """The settings `cfg`'s arch (and binding) read, in ModelConfig's order: what a run records,
    without the fields of other families (an LSTM's width on a Transformer)."""
    used = {*CORE_SETTINGS, *_ARCH_SETTINGS[cfg.arch]}
    if "binding" in used:
        used.update(BINDING_SETTINGS.get(cfg.binding, ()))
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(ModelConfig) if f.name in used}


def register_preset(name: str, **fields) -> None:
    """Register named defaults for ModelConfig; overrides given at resolve time win."""
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(fields) - known)
    if unknown or name in _PRESETS:
        raise ValueError(f"preset {name!r}: duplicate name or unknown fields {unknown}")
    _PRESETS[name] = fields


def list_archs() -> list[str]:
    return sorted(_ARCHS)


def list_presets(task: str | None = "seq2seq") -> dict[str, dict]:
    """The complete settings (ModelConfig defaults filled in), by name, of every preset whose arch
    serves `task` (default: the sequence archs, whose builders need no extra sizes); None: all."""
    presets = {name: dataclasses.asdict(ModelConfig(**fields)) for name, fields in sorted(_PRESETS.items())}
    if task is None:
        return presets
    return {name: p for name, p in presets.items() if _ARCH_TASKS.get(p["arch"], "seq2seq") == task}


def preset_fields(name: str, where: str = "model") -> dict:
    """A copy of the fields preset `name` sets."""
    if name not in _PRESETS:
        raise TpreproError(f"{where}.preset: {unknown('preset', name, sorted(_PRESETS))}")
    return dict(_PRESETS[name])


def validate_config(cfg: ModelConfig, where: str = "model") -> ModelConfig:
    """`cfg` checked as `ModelConfig.validate` does, and against its arch: a registered one, and for
    sequence archs heads that divide d_model (N2F archs have no heads). Errors name `where.key`."""
    if cfg.arch not in _ARCHS:
        raise TpreproError(f"{where}.arch: {unknown('arch', cfg.arch, list_archs())}")
    cfg.validate(where)
    if arch_task(cfg.arch) == "seq2seq" and cfg.d_model % cfg.n_heads:
        raise TpreproError(
            f"{where}.d_model: {cfg.d_model} is not divisible by n_heads={cfg.n_heads} (d_k = d_model / n_heads)"
        )
    return cfg


def _coerce(key: str, value: object, kind: type, where: str) -> object:
    """`value` as type `kind` (int is accepted for float; bool is never an int)."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise TpreproError(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__} {value!r}")


def resolve_model_config(preset: str, overrides: dict | None = None, where: str = "model") -> ModelConfig:
    """The preset's settings with `overrides` applied on top, type-checked and validated.

    Errors name the offending key with the `where` prefix, e.g.
    "models.tp_transformer.d_modle: unknown setting; known: arch, d_model, ...".
    """
    types = typing.get_type_hints(ModelConfig)
    known = [f.name for f in dataclasses.fields(ModelConfig)]
    values = preset_fields(preset, where)
    for key, value in (overrides or {}).items():
        if key not in types:
            raise TpreproError(f"{where}.{key}: {unknown('setting', key, known)}")
        values[key] = _coerce(key, value, types[key], where)
    return validate_config(ModelConfig(**values), where)


def build_model(cfg: ModelConfig, vocab_size: int, pad_id: int, **sizes: int) -> nn.Module:
    """Validate `cfg` and build its arch for a (source) vocabulary of `vocab_size` symbols;
    `sizes` go to the builder as keywords (the n2f archs: n_relations, n_arguments)."""
    validate_config(cfg)
    return _ARCHS[cfg.arch](cfg, vocab_size, pad_id, **sizes)
