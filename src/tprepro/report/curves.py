"""Learning-curve figures: held-out loss and exact match per checkpoint, one line per run."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping

import pandas as pd

from tprepro.evaluate.curves import CURVE_FILE, read_curve
from tprepro.figures import model_colours, plt, save

LINESTYLES = ("-", "--", ":", "-.")  # one per seed
MARKERS = ("o", "s", "^", "D", "v", "P", "X")  # one per model


def read_curves(models_dir: Path, runs: Mapping[str, tuple[str, int]]) -> dict[tuple[str, int], pd.DataFrame]:
    """{(model, seed): curve} for each run directory name in `runs` ({run: (model, seed)})."""
    return {key: read_curve(models_dir / run / CURVE_FILE) for run, key in runs.items()}


def curve_figure(curves: Mapping[tuple[str, int], pd.DataFrame], path: Path, title: str) -> None:
    """`draw_curves` saved as a PNG at `path`."""
    save(draw_curves(curves, title), path)


def draw_curves(curves: Mapping[tuple[str, int], pd.DataFrame], title: str) -> plt.Figure:
    """Two panels over training steps (held-out loss, held-out exact match); a colour and a marker
    per model, a line style per seed; each later model's line thinner and drawn on top, so that
    equal curves (two models both at 0%) show both; the sample size in the axis label."""
    models = list(dict.fromkeys(model for model, _ in curves))
    seeds = sorted({seed for _, seed in curves})
    colours = model_colours(models)
    sizes = sorted({int(n) for curve in curves.values() for n in curve["n"]})
    fig, (loss_ax, match_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for (model, seed), curve in curves.items():
        k = models.index(model)
        style = dict(color=colours[model], linestyle=LINESTYLES[seeds.index(seed) % len(LINESTYLES)],
                     marker=MARKERS[k % len(MARKERS)], markersize=max(7 - 1.5 * k, 2.5),
                     linewidth=max(3.0 - 0.8 * k, 1.0), zorder=2 + k, label=f"{model} (seed {seed})")
        loss_ax.plot(curve["step"], curve["heldout_loss"], **style)
        match_ax.plot(curve["step"], curve["heldout_exact_match"], **style)
    loss_ax.set_ylabel("held-out loss (nats per target symbol)")
    match_ax.set_ylabel(f"held-out exact match (n = {', '.join(map(str, sizes))})")
    match_ax.set_ylim(0, 1)
    for ax in (loss_ax, match_ax):
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    match_ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(textwrap.fill(title, 100))  # long budgets wrap instead of running off the page
    return fig
