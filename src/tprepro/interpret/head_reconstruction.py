"""Head reconstruction (Schlag et al. Sec. 6.1, Eq. 10): how much of the final encoder state z_t a
single head's value vector v_h(z_t) keeps. v_h is the value map of one decoder cross-attention (the
maps that read z_t); per head an affine least-squares map v_h(z_t) -> z_t is fitted on some problems
and its mean squared error measured on held-out problems (split by problem, not by position)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import GroupShuffleSplit
from torch import nn

from tprepro.data.batching import collate
from tprepro.errors import TpreproError
from tprepro.figures import model_colours, plt, save
from tprepro.interpret.hooks import layer_name, teacher_forced


def supports_reconstruction(model) -> bool:
    """Layered encoder-decoder Transformers (the Transformer, the TP-Transformer and its variants)."""
    return all(isinstance(getattr(model, side, None), nn.ModuleList)
               for side in ("encoder", "decoder"))


def head_values(model, vocab, rows: list[tuple[str, str]], decoder_layer: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values [N, H, d_k], final encoder states [N, D], problem index [N]) at every real source position."""
    final = layer_name(model, "encoder", -1)
    value = f"{layer_name(model, 'decoder', decoder_layer)}.cross_attn.v_proj"
    batch = collate(rows, vocab)
    calls = teacher_forced(model, batch.src, batch.tgt_in, [final, value])
    states, values = calls[final][-1], calls[value][-1]  # [B, S, D] each
    real = batch.src != vocab.pad_id  # [B, S]
    heads = model.cfg.n_heads
    per_head = values.unflatten(-1, (heads, values.size(-1) // heads))  # [B, S, H, d_k]
    problem = np.broadcast_to(np.arange(real.size(0))[:, None], tuple(real.shape))[real.numpy()]
    return per_head[real].float().numpy(), states[real].float().numpy(), problem


def reconstruction_mse(values: np.ndarray, states: np.ndarray, groups: np.ndarray, test_fraction: float,
                       seed: int) -> np.ndarray:
    """Held-out MSE of the affine map v_h -> z per head h: [H]. values [N, H, d_k]; states [N, D]."""
    if len(np.unique(groups)) < 2:
        raise TpreproError("interpret.head_reconstruction.n: need at least 2 problems for a held-out split")
    split = GroupShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed)
    train, test = next(split.split(states, groups=groups))
    errors = []
    for h in range(values.shape[1]):
        fit = LinearRegression().fit(values[train, h], states[train])
        errors.append(mean_squared_error(states[test], fit.predict(values[test, h])))
    return np.asarray(errors)


def mse_table(results: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per model: the MSE of each head and their mean."""
    rows = []
    for model, errors in results.items():
        rows.append({"model": model, **{f"head_{h}": float(e) for h, e in enumerate(errors)},
                     "mean": float(np.mean(errors))})
    return pd.DataFrame(rows)


def mse_figure(table: pd.DataFrame, path: Path, title: str) -> None:
    """Grouped bars: per head, one bar per run (`<model>-s<seed>`, in its model's colour); the mean
    in the legend, which sits beside the bars."""
    heads = [c for c in table.columns if c.startswith("head_")]
    models = [re.sub(r"-s\d+$", "", run) for run in table["model"]]
    colours = model_colours(models)
    width = 0.8 / len(table)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(heads) + 2) + 3.0, 3.4))
    for k, row in enumerate(table.to_dict("records")):
        x = np.arange(len(heads)) + k * width
        model = models[k]
        ax.bar(x, [row[h] for h in heads], width=width, color=colours[model],  # a model's 2nd, 4th, ... seed hatched
               label=f"{row['model']} (mean {row['mean']:.4f})", hatch="//" * (models[:k].count(model) % 2))
    ax.set_xticks(np.arange(len(heads)) + width * (len(table) - 1) / 2, [h.replace("_", " ") for h in heads])
    ax.set_ylabel("held-out MSE of ẑ_t from v_h(z_t)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(textwrap.fill(title, 80), fontsize=9)
    save(fig, path)
