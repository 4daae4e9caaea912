"""Teacher-forced passes that read a trained model's hooks (tprepro.models.probes), and the names
of the submodules the analyses read. Nothing here re-implements a forward pass."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from tprepro.models.attention import MultiHeadAttention
from tprepro.models.probes import capture, record_attention


def teacher_forced(model: nn.Module, src: Tensor, tgt_in: Tensor, names: Sequence[str],
                   attention: bool = False) -> dict[str, list[Tensor]]:
    """One teacher-forced `model(src, tgt_in)`; the outputs of the submodules `names` (full dotted
    names), one tensor per call. `attention`: attention probabilities pass their probes."""
    with torch.inference_mode(), contextlib.ExitStack() as stack:
        if attention:
            stack.enter_context(record_attention(model))
        captured = {name: stack.enter_context(capture(model, name)) for name in names}
        model(src, tgt_in)
    return {name: calls.get(name, []) for name, calls in captured.items()}


def module_names(model: nn.Module, kind: type[nn.Module]) -> list[str]:
    return [name for name, module in model.named_modules() if isinstance(module, kind)]


def last_attention(model: nn.Module, side: str, kind: str) -> str:
    """The name of the last `kind` ("self_attn" | "cross_attn") attention on `side` ("encoder" |
    "decoder"): e.g. encoder.1.self_attn, or encoder_block.self_attn of a Universal Transformer
    (whose one cell runs every step: its last call is the last step)."""
    names = [n for n in module_names(model, MultiHeadAttention) if n.startswith(side) and n.endswith(kind)]
    if not names:
        raise ValueError(f"{type(model).__name__} has no {side} {kind} attention")
    return names[-1]


def layer_name(model: nn.Module, side: str, layer: int) -> str:
    """`side`.<layer> of a layer stack (negative: from the end), e.g. encoder.1 for layer -1 of 2."""
    layers = getattr(model, side)
    return f"{side}.{range(len(layers))[layer]}"


def layer_number(model: nn.Module, side: str, layer: int) -> int:
    """The 1-based position of `layer` (negative: from the end) in `side`'s stack, as a reader counts."""
    return range(len(getattr(model, side)))[layer] + 1


def source_labels(vocab, src: Tensor) -> list[list[str]]:
    """The symbols of each row of a character-level `src` [B, S], padding dropped."""
    return [[vocab.symbols[i] for i in row if i != vocab.pad_id] for row in src.tolist()]
