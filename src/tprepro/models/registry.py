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
from tprepro.models.config import RENAMED_INITS, ModelConfig

# A builder is called as builder(cfg, vocab_size, pad_id, **sizes) and returns the model. Sequence
# archs (task "seq2seq") take no extra sizes; tuple archs (task "n2f") take n_relations, n_arguments.
Builder = Callable[..., nn.Module]
TASKS = ("seq2seq", "n2f")

_ARCHS: dict[str, Builder] = {}
_ARCH_TASKS: dict[str, str] = {}
_ARCH_SETTINGS: dict[str, tuple[str, ...]] = {}
_ARCH_FAMILIES: dict[str, type | None] = {}
_PRESETS: dict[str, dict] = {}

# The ModelConfig fields every arch reads, and those a binding adds (binding.py).
CORE_SETTINGS = ("arch", "d_model", "dropout", "init")
BINDING_SETTINGS = {"discrete_role": ("n_roles", "d_role"), "full_tensor": ("d_role",)}
_CORE_FIELDS = tuple(f.name for f in dataclasses.fields(ModelConfig) if f.name != "family")


def register_arch(name: str, task: str = "seq2seq", settings: tuple[str, ...] = (),
                  family: type | None = None) -> Callable[[Builder], Builder]:
    """Decorator: register a model class or builder function under `name` (config field `arch`).

    `task` says which data the arch models, hence which sizes its builder takes: "seq2seq"
    (token sequences; builder(cfg, vocab_size, pad_id)) or "n2f" (relational-tuple programs;
    builder(cfg, vocab_size, pad_id, n_relations=..., n_arguments=...)). `settings`: the
    ModelConfig fields the arch reads beyond CORE_SETTINGS (what its runs record). `family`: the
    dataclass of the arch family's own settings (with a `validate(where)`), held in cfg.family.
    """
    unknown_fields = sorted(set(settings) - set(_CORE_FIELDS))
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
        _ARCH_FAMILIES[name] = family
        return builder

    return decorate


def arch_task(name: str) -> str:
    """The task ("seq2seq" or "n2f") arch `name` was registered for."""
    return _ARCH_TASKS[name]


def arch_packs(name: str) -> bool:
    """Whether arch `name` reads packed rows (data/packing.py, `train.packing`)."""
    return bool(getattr(_ARCHS[name], "supports_packing", False))


def _family_fields(arch: str) -> tuple[str, ...]:
    family = _ARCH_FAMILIES.get(arch)
    return tuple(f.name for f in dataclasses.fields(family)) if family else ()


def setting_names(arch: str) -> tuple[str, ...]:
    """Every setting a config of `arch` has, flat: the core's, then its family's."""
    return (*_CORE_FIELDS, *_family_fields(arch))


def flat_settings(cfg: ModelConfig) -> dict:
    """Every setting of `cfg` in one flat mapping, as params.yaml and the presets write them."""
    core = {key: getattr(cfg, key) for key in _CORE_FIELDS}
    return {**core, **(dataclasses.asdict(cfg.family) if cfg.family is not None else {})}


def arch_settings(cfg: ModelConfig) -> dict:
    """The settings `cfg`'s arch (and binding) read, flat: what a run records, without the shared
    fields the arch ignores (a Transformer's run shows no role dictionary unless its binding has one)."""
    used = {*CORE_SETTINGS, *_ARCH_SETTINGS[cfg.arch]}
    if "binding" in used:
        used.update(BINDING_SETTINGS.get(cfg.binding, ()))
    return {key: value for key, value in flat_settings(cfg).items() if key in used or key in _family_fields(cfg.arch)}


def register_preset(name: str, **fields) -> None:
    """Register named defaults (flat: core and family settings) for an arch; overrides given at
    resolve time win."""
    arch = fields.get("arch", ModelConfig.arch)
    unknown_fields = sorted(set(fields) - set(setting_names(arch)))
    if arch not in _ARCHS or unknown_fields or name in _PRESETS:
        raise ValueError(f"preset {name!r}: duplicate name, unregistered arch {arch!r} or settings "
                         f"{unknown_fields} that arch does not have")
    _PRESETS[name] = fields


def list_archs() -> list[str]:
    return sorted(_ARCHS)


def list_presets(task: str | None = "seq2seq") -> dict[str, dict]:
    """The complete flat settings (defaults filled in), by name, of every preset whose arch serves
    `task` (default: the sequence archs, whose builders need no extra sizes); None: all."""
    presets = {name: flat_settings(model_config_from_dict(fields)) for name, fields in sorted(_PRESETS.items())}
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


def model_config_from_dict(values: dict, where: str = "model", strict: bool = True) -> ModelConfig:
    """A ModelConfig from flat settings (core and family keys mixed) or from a stored one (a nested
    `family` mapping). `strict`: a key that is neither the core's nor the arch's family's is an error
    naming `where.key`; otherwise (models exported before the family split, which stored every
    family's fields) it is dropped. Types are checked; nothing else is validated."""
    values = dict(values)
    values.update(values.pop("family", None) or {})
    arch = values.get("arch", ModelConfig.arch)
    if arch not in _ARCHS:
        raise TpreproError(f"{where}.arch: {unknown('arch', arch, list_archs())}")
    family = _ARCH_FAMILIES[arch]
    types = {**typing.get_type_hints(ModelConfig), **(typing.get_type_hints(family) if family else {})}
    known = setting_names(arch)
    core, own = {}, {}
    for key, value in values.items():
        if key not in known:
            if strict:
                raise TpreproError(f"{where}.{key}: {unknown('setting', key, known)} of arch {arch}")
            continue
        (core if key in _CORE_FIELDS else own)[key] = _coerce(key, value, types[key], where)
    return ModelConfig(**core, family=family(**own) if family else None)


def stored_model_config(values: dict) -> ModelConfig:
    """The ModelConfig an exported model stored (nested, or flat from before the family split);
    an init stored under an old name gets its new one (the init only shapes the starting weights,
    which the stored weights replace)."""
    values = dict(values)
    values["init"] = RENAMED_INITS.get(values.get("init"), values.get("init", ModelConfig.init))
    return model_config_from_dict(values, "stored model", strict=False)


def resolve_model_config(preset: str, overrides: dict | None = None, where: str = "model") -> ModelConfig:
    """The preset's settings with `overrides` (flat) applied on top, type-checked and validated.

    Errors name the offending key with the `where` prefix, e.g.
    "models.tp_transformer.d_modle: unknown setting 'd_modle'; did you mean 'd_model'? (known: ...) of arch
    tp_transformer" (a family's setting on another arch, e.g. `ut_steps` on a Transformer, is unknown).
    """
    values = {**preset_fields(preset, where), **(overrides or {})}
    return validate_config(model_config_from_dict(values, where), where)


def build_model(cfg: ModelConfig, vocab_size: int, pad_id: int, **sizes: int) -> nn.Module:
    """Validate `cfg` and build its arch for a (source) vocabulary of `vocab_size` symbols;
    `sizes` go to the builder as keywords (the n2f archs: n_relations, n_arguments)."""
    validate_config(cfg)
    return _ARCHS[cfg.arch](cfg, vocab_size, pad_id, **sizes)


# The sizes `tprepro models` and the plan count a preset's weights at: the Mathematics character
# vocabulary, and for the N2F models a word vocabulary and tuple vocabularies of release scale.
REFERENCE_SIZES = {"seq2seq": {"vocab_size": 72}, "n2f": {"vocab_size": 5000, "n_relations": 60, "n_arguments": 100}}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def preset_parameters(preset: str, **sizes: int) -> int:
    """A preset's weights at `sizes` (default: its task's REFERENCE_SIZES), built on the meta device
    (no memory, no initialisation)."""
    import torch

    cfg = resolve_model_config(preset, {}, where=preset)
    with torch.device("meta"):
        return count_parameters(build_model(cfg, pad_id=0, **(sizes or REFERENCE_SIZES[arch_task(cfg.arch)])))
