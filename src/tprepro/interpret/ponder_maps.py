"""Ponder maps of the Adaptive Universal Transformer: the number of updates N(t) the encoder's ACT
gives each input position, read from `encoder_act.weight_probe`: a position's last nonzero weight p^n
is its remainder R(t) >= epsilon at its last update N(t) (earlier weights h^n may underflow to 0, and
after halting they are exactly 0); a heat map for chosen examples and the mean per expression type."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tprepro.data.batching import collate
from tprepro.figures import plt, save
from tprepro.interpret.hooks import source_labels, teacher_forced
from tprepro.interpret.plotting import shown

PROBE = "encoder_act.weight_probe"


def has_ponder(model) -> bool:
    return PROBE in dict(model.named_modules())


def encoder_updates(model, vocab, rows: list[tuple[str, str]]) -> tuple[list[list[str]], list[list[int]]]:
    """(source symbols, updates N(t) of each) per problem."""
    batch = collate(rows, vocab)
    weights = torch.stack(teacher_forced(model, batch.src, batch.tgt_in, [PROBE])[PROBE])  # [N_steps, B, S]
    steps = torch.arange(1, weights.size(0) + 1)[:, None, None]  # [N_steps, 1, 1]
    updates = (steps * (weights > 0)).amax(dim=0)  # [B, S]: the last update with weight; 0 at padding
    symbols = source_labels(vocab, batch.src)
    return symbols, [updates[i, : len(s)].tolist() for i, s in enumerate(symbols)]


def mean_by_type(types: list[str], updates: list[list[int]]) -> pd.DataFrame:
    """Mean updates per input position, averaged per expression type."""
    frame = pd.DataFrame({"type": types, "mean_updates": [float(np.mean(u)) for u in updates]})
    return frame.groupby("type", sort=True).agg(problems=("mean_updates", "size"),
                                                mean_updates=("mean_updates", "mean")).reset_index()


def ponder_figure(symbols: list[list[str]], updates: list[list[int]], max_steps: int, path: Path, title: str) -> None:
    """Rows: examples; columns: input positions; colour and number: N(t); the symbols on top."""
    width = max(map(len, symbols))
    grid = np.full((len(symbols), width), np.nan)
    for i, u in enumerate(updates):
        grid[i, : len(u)] = u
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * width), 0.55 * len(symbols) + 1.2))
    image = ax.imshow(grid, cmap="magma_r", vmin=0, vmax=max_steps, aspect="auto")
    for i, (s, u) in enumerate(zip(symbols, updates)):
        for j, (symbol, n) in enumerate(zip(s, u)):
            red, green, blue, _ = image.cmap(image.norm(n))
            ink = "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"  # readable on its cell
            ax.text(j, i, f"{shown(symbol)}\n{n}", ha="center", va="center", fontsize=7, color=ink)
    ax.set_yticks(range(len(symbols)), [f"example {i + 1}" for i in range(len(symbols))], fontsize=7)
    ax.set_xticks([])
    fig.colorbar(image, ax=ax, fraction=0.03, label="updates N(t)")
    ax.set_title(textwrap.fill(title, 90), fontsize=9)
    save(fig, path)
