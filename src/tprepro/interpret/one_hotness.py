"""Role one-hotness (Jiang et al.: over 90% of role-attention distributions have a maximum above
0.98) per discrete-role sub-layer of a TPT-d model: the share above the threshold and the histogram
of the maxima. The maxima come from tprepro.evaluate.roles (the same passes as `role_sharpness`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tprepro.evaluate.roles import THRESHOLD, has_discrete_roles, role_peaks
from tprepro.figures import plt, save

__all__ = ["has_discrete_roles", "one_hotness", "one_hotness_figure"]


def sublayer(name: str) -> tuple[str, str]:
    """(layer, attention type) of a sub-layer name (evaluate.roles.sublayer_name), e.g. ("dec1", "cross")."""
    layer, attention = name.split(".", 1)
    return layer, attention


def one_hotness(model, vocab, rows: list[tuple[str, str]], batch_size: int, bins: int,
                threshold: float = THRESHOLD) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """(one row per sub-layer: layer, attention, distributions, share above `threshold`;
    {probe name: histogram counts of the maxima over `bins` equal bins of [0, 1]})."""
    peaks = role_peaks(model, vocab, rows, batch_size)
    table, histograms = [], {}
    for name, values in peaks.items():
        layer, attention = sublayer(name)
        table.append({"layer": layer, "attention": attention, "distributions": values.numel(),
                      "share_above": float((values > threshold).float().mean()), "threshold": threshold})
        histograms[name] = np.histogram(values.numpy(), bins=bins, range=(0.0, 1.0))[0]
    return pd.DataFrame(table), histograms


def one_hotness_figure(histograms: dict[str, np.ndarray], table: pd.DataFrame, path: Path, title: str) -> None:
    """One histogram of the maxima per sub-layer, its share above the threshold in the title."""
    fig, axes = plt.subplots(1, len(histograms), figsize=(2.6 * len(histograms), 2.6), squeeze=False)
    for ax, (name, counts), row in zip(axes[0], histograms.items(), table.to_dict("records")):
        edges = np.linspace(0, 1, len(counts) + 1)
        ax.bar(edges[:-1], counts, width=edges[1] - edges[0], align="edge")
        ax.axvline(row["threshold"], color="red", lw=0.8)
        ax.set_title(f"{row['layer']} {row['attention']}\n{row['share_above']:.1%} > {row['threshold']}", fontsize=8)
        ax.set_xlabel("max role weight", fontsize=7)
    fig.suptitle(title, fontsize=9)
    save(fig, path)
