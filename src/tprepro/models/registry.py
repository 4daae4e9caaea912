"""Registries of model builders (archs) and named presets (fairseq-style named architectures)."""

from __future__ import annotations

import dataclasses
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
_PRESETS: dict[str, dict] = {}


def register_arch(name: str, task: str = "seq2seq") -> Callable[[Builder], Builder]:
    """Decorator: register a model class or builder function under `name` (config field `arch`).

    `task` says which data the arch models, hence which sizes its builder takes: "seq2seq"
    (token sequences; builder(cfg, vocab_size, pad_id)) or "n2f" (relational-tuple programs;
    builder(cfg, vocab_size, pad_id, n_relations=..., n_arguments=...)).
    """
    if task not in TASKS:
        raise ValueError(f"arch {name!r}: unknown task {task!r}; known: {', '.join(TASKS)}")

    def decorate(builder: Builder) -> Builder:
        if name in _ARCHS:
            raise ValueError(f"arch {name!r} is already registered")
        _ARCHS[name] = builder
        _ARCH_TASKS[name] = task
        return builder

    return decorate


def arch_task(name: str) -> str:
    """The task ("seq2seq" or "n2f") arch `name` was registered for."""
    return _ARCH_TASKS[name]


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


def build_model(cfg: ModelConfig, vocab_size: int, pad_id: int, **sizes: int) -> nn.Module:
    """Validate `cfg` and build its arch for a (source) vocabulary of `vocab_size` symbols;
    `sizes` go to the builder as keywords (the n2f archs: n_relations, n_arguments)."""
    cfg.validate()
    return _ARCHS[cfg.arch](cfg, vocab_size, pad_id, **sizes)


# Sec. 4.1: d_z=512, d_f=2048, H=8, L=6 (encoder and decoder). Dropout is not mentioned in the
# paper, so it stays at the ModelConfig default of 0. Initialisation: the authors' released code
# (initialisation.py; `init: paper_literal` is Sec. 4.1 read literally).
_PAPER = dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.0, init="authors")
# Tiny CPU configurations that train in minutes (d_f = 4 d_z as in the paper).
_TINY = dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256, dropout=0.0, init="authors")
_TRANSFORMER = dict(arch="transformer", binding="identity", role_embedding=False)
_TP_TRANSFORMER = dict(arch="tp_transformer", binding="continuous_role", role_embedding=True)

register_preset("transformer_paper", **_PAPER, **_TRANSFORMER)
register_preset("tp_transformer_paper", **_PAPER, **_TP_TRANSFORMER)
register_preset("transformer_tiny", **_TINY, **_TRANSFORMER)
register_preset("tp_transformer_tiny", **_TINY, **_TP_TRANSFORMER)

# ---- the variants of issue 3 -------------------------------------------------------------------
# TPT-d (summarization paper, Sec. 3.2): N_r = 50 role embeddings of width d_r = 64 = d_model / H per
# attention sub-layer, bound after the residual; no role-scaled input embedding (the paper has none).
_TPT_D = dict(arch="tp_transformer", binding="discrete_role", role_embedding=False, n_roles=50)
register_preset("tpt_d_paper", **_PAPER, **_TPT_D, d_role=64)
register_preset("tpt_d_tiny", **_TINY, **_TPT_D, d_role=16)
# Full tensor product v̄ ⊗ r (appendix A): d_k * d_r values per head; tiny only (at paper size W^(o)
# alone would hold 8 * 64 * 64 * 512 weights per attention).
register_preset("full_tensor_tiny", **_TINY, arch="tp_transformer", binding="full_tensor", role_embedding=True,
                d_role=4)
# Wangperawong (2019): 2 encoder and 2 decoder layers, 4 heads, feed-forward 128, dropout 0.1. The paper
# states no d_model beyond "smaller" than the base model; 128 is tensor2tensor's tiny hidden size
# (a feed-forward of 128 presumes d_model <= 128). For the UT, "2 layers" are 2 recurrent steps; the AUT
# caps N(t) at 24 as the paper does. The paper states no initialisation; tensor2tensor, which it used,
# draws the embedding N(0, 1/d) and scales it by sqrt(d), as `init: authors` does.
_WANGPERAWONG = dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128, dropout=0.1,
                     init="authors", binding="identity", role_embedding=False)
register_preset("wangperawong_transformer", **_WANGPERAWONG, arch="transformer")
register_preset("wangperawong_ut", **_WANGPERAWONG, arch="universal_transformer", ut_steps=2)
register_preset("wangperawong_aut", **_WANGPERAWONG, arch="adaptive_universal_transformer", act_max_steps=24,
                act_epsilon=0.01)
_PLAIN = dict(binding="identity", role_embedding=False)
register_preset("ut_tiny", **_TINY, **_PLAIN, arch="universal_transformer", ut_steps=2)
register_preset("aut_tiny", **_TINY, **_PLAIN, arch="adaptive_universal_transformer", act_max_steps=4)
# LSTM encoder-decoder with attention (lstm.py). saxton_simple_lstm matches the 18M weights of Saxton et
# al.'s Simple LSTM (Table 1) with 72 symbols, not its shape: see lstm.py.
_LSTM = dict(arch="lstm", init="pytorch", dropout=0.0, **_PLAIN)
register_preset("saxton_simple_lstm", **_LSTM, d_model=768, lstm_hidden=1024, lstm_layers=1)
register_preset("lstm_tiny", **_LSTM, d_model=64, lstm_hidden=128, lstm_layers=1)

# ---- the summarization experiment (issue 13; Jiang et al. 2021, Sec. 3.2) ----------------------------------
# Transformer, TPT-c (Schlag et al.'s continuous roles) and TPT-d (N_r = 50 discrete roles of d_r = 64):
# 6 + 6 layers, 8 heads, d_k = 64, d_m = 512, d_f = 2048, dropout 0.1. Tiny: CPU minutes.
_SUMMARY_PAPER = dict(_PAPER, dropout=0.1)
_SUMMARY_TINY = dict(_TINY, dropout=0.1)
for _size, _base, _d_role in (("paper", _SUMMARY_PAPER, 64), ("tiny", _SUMMARY_TINY, 16)):
    register_preset(f"summarization_transformer_{_size}", **_base, **_TRANSFORMER)
    register_preset(f"summarization_tpt_c_{_size}", **_base, **_TP_TRANSFORMER)
    register_preset(f"summarization_tpt_d_{_size}", **_base, **_TPT_D, d_role=_d_role)

# ---- TP-N2F and its ablations (issue 4; n2f.py) -----------------------------------------------------
# Appendix A.1: n_F=150, n_R=50 and, per dataset, d_F, d_R, d_Rel, d_Arg, d_Pos; a one-layer Reasoning
# MLP; the LSTM baselines (seq2prog = lstm2lstm, tp2lstm, lstm2tp) have hidden size 100, one layer, one
# direction. The word- and tuple-embedding widths are not stated in the paper: 128, what a public
# implementation of the paper used. MathQA tuples have 2 arguments, AlgoLisp tuples 3.
_N2F = dict(init="pytorch", dropout=0.0, lstm_layers=1, selection_temperature=0.1, reasoning_layers=1,
            mask_padding=True, **_PLAIN)
_N2F_PAPER = dict(_N2F, d_model=128, d_tuple_embedding=128, lstm_hidden=100, n_fillers=150, n_roles=50)
_N2F_DATASETS = {
    "mathqa": dict(d_filler=30, d_role=20, d_relation=20, d_argument=10, d_position=5, tuple_arity=2),
    "algolisp": dict(d_filler=30, d_role=30, d_relation=30, d_argument=20, d_position=5, tuple_arity=3),
}
for _dataset, _sizes in _N2F_DATASETS.items():
    for _arch in ("tp_n2f", "lstm2lstm", "tp2lstm", "lstm2tp"):
        register_preset(f"{_arch}_{_dataset}", **_N2F_PAPER, **_sizes, arch=_arch)
# Tiny CPU configurations (arity 2; set tuple_arity per dataset in params): d_T = 48, d_H = 108.
_N2F_TINY = dict(_N2F, d_model=32, d_tuple_embedding=16, lstm_hidden=64, n_fillers=20, n_roles=10, d_filler=8,
                 d_role=6, d_relation=6, d_argument=6, d_position=3, tuple_arity=2)
for _arch in ("tp_n2f", "lstm2lstm", "tp2lstm", "lstm2tp"):
    register_preset(f"{_arch}_tiny", **_N2F_TINY, arch=_arch)
