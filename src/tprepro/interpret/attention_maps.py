"""Attention maps (Schlag et al. Sec. 5.2, Fig. 4; Wangperawong Figs. 1-3): for chosen examples,
one head's encoder self-attention in the last encoder layer (source x source) and its decoder
cross-attention in the last decoder layer (output x source), teacher-forced on the gold answer.
A Universal Transformer's shared cell runs every step: its last call (the last step) is shown."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from tprepro.data.batching import collate
from tprepro.errors import TpreproError
from tprepro.figures import plt, save
from tprepro.interpret.hooks import last_attention, source_labels, teacher_forced
from tprepro.interpret.plotting import shown


@dataclass
class AttentionMap:
    example: int
    kind: str  # "encoder self-attention" | "decoder cross-attention"
    module: str  # the attention module read
    head: int
    rows: list[str]  # query symbols
    cols: list[str]  # key symbols
    weights: list[list[float]]  # [len(rows), len(cols)]


def has_attention_maps(model) -> bool:
    """Models built of MultiHeadAttention (every Transformer variant; not the LSTM)."""
    try:
        last_attention(model, "encoder", "self_attn"), last_attention(model, "decoder", "cross_attn")
    except ValueError:
        return False
    return True


def attention_maps(model, vocab, rows: list[tuple[str, str]], head: int) -> list[AttentionMap]:
    """Two maps per example (source x source, output x source) of head `head`."""
    if not 0 <= head < model.cfg.n_heads:
        raise TpreproError(f"interpret.attention.head: {head} is not a head of a {model.cfg.n_heads}-head model")
    encoder, cross = last_attention(model, "encoder", "self_attn"), last_attention(model, "decoder", "cross_attn")
    probes = [f"{encoder}.attention_probe", f"{cross}.attention_probe"]
    batch = collate(rows, vocab)
    calls = teacher_forced(model, batch.src, batch.tgt_in, probes, attention=True)
    self_probs = calls[probes[0]][-1].float().numpy()  # [B, H, S, S]
    cross_probs = calls[probes[1]][-1].float().numpy()  # [B, H, T, S]
    maps = []
    for i, (sources, targets) in enumerate(zip(source_labels(vocab, batch.src), source_labels(vocab, batch.tgt_out))):
        s, t = len(sources), len(targets)
        maps.append(AttentionMap(i, "encoder self-attention", encoder, head, sources, sources,
                                 self_probs[i, head, :s, :s].tolist()))
        maps.append(AttentionMap(i, "decoder cross-attention", cross, head, targets, sources,
                                 cross_probs[i, head, :t, :s].tolist()))
    return maps


def as_records(maps: list[AttentionMap]) -> list[dict]:
    return [asdict(m) for m in maps]


def attention_figure(maps: list[AttentionMap], path: Path, title: str) -> None:
    """One row per example: its self-attention map beside its cross-attention map, the symbols on the axes
    (the weights themselves are in attention.json)."""
    examples = sorted({m.example for m in maps})
    width = max(len(m.cols) for m in maps)
    fig, axes = plt.subplots(len(examples), 2, figsize=(max(8.0, 0.5 * width), 4.2 * len(examples)), squeeze=False)
    for row, example in enumerate(examples):
        for col, m in enumerate([m for m in maps if m.example == example]):
            weights = np.asarray(m.weights)
            image = axes[row, col].imshow(weights, cmap="viridis", aspect="auto", vmin=0, vmax=1)
            axes[row, col].set_xticks(range(len(m.cols)), [shown(c) for c in m.cols], fontsize=7)
            axes[row, col].set_yticks(range(len(m.rows)), [shown(r) for r in m.rows], fontsize=7)
            axes[row, col].set_title(f"example {example + 1}: {m.kind}, head {m.head}\n({m.module})", fontsize=8)
            fig.colorbar(image, ax=axes[row, col], fraction=0.03)
    fig.suptitle(title, fontsize=10)
    save(fig, path)
