"""Per-module accuracy of every model on both splits (the shape of the paper's Fig. 2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from tprepro.figures import model_colours, plt, save

SPLITS = ("interpolate", "extrapolate")


def module_figure(modules: pd.DataFrame, path: Path, title: str = "") -> None:
    """`draw_modules` saved as a PNG at `path`."""
    save(draw_modules(modules, title), path)


def draw_modules(modules: pd.DataFrame, title: str = "") -> plt.Figure:
    """Horizontal grouped bars: one panel per split, one bar per model and module, each labelled
    with its accuracy (so a 0% bar reads as 0%, not as missing); `title` (e.g. the budget) on top."""
    models = list(dict.fromkeys(modules["model"]))
    colours = model_colours(models)
    panels = [s for s in SPLITS if (modules["split"] == s).any()]
    heights = [max(2.0, 0.35 * len(models) * modules[modules["split"] == s]["module"].nunique()) for s in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, sum(heights) + 1.5),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    width = 0.8 / len(models)
    for ax, split in zip(axes[:, 0], panels):
        part = modules[modules["split"] == split]
        names = sorted(part["module"].unique())
        y = np.arange(len(names))
        for k, model in enumerate(models):
            acc = part[part["model"] == model].set_index("module")["accuracy"].reindex(names)
            bars = ax.barh(y + k * width, acc.to_numpy(), height=width, label=model, color=colours[model])
            ax.bar_label(bars, labels=[f"{a:.0%}" if a == a else "n/a" for a in acc], fontsize=7, padding=2)
        ax.set_yticks(y + width * (len(models) - 1) / 2, names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.1)  # room for a 100% bar's label
        ax.set_xlabel("accuracy")
        ax.set_title(split)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the bars, not over them
    if title:
        fig.suptitle(textwrap.fill(title, 90), fontsize=9)  # wrapped: a long budget never runs off the page
    return fig
