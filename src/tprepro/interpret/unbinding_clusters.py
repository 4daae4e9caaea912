"""Unbinding clusters (Chen et al. Sec. 4.3, Figs. 4-5): the TP-N2F decoder's relation unbinding
vectors r'_rel (its `relation_probe`), teacher-forced over sampled problems and averaged per gold
operator/function; k-means on the averages, drawn in their first two principal components."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA

from tprepro.figures import plt, save
from tprepro.interpret.hooks import teacher_forced
from tprepro.data.tuple_ids import RELATION_SPECIALS

PROBE = "decoder.readout.unbinding.relation_probe"


def has_unbinding(model) -> bool:
    return PROBE in dict(model.named_modules())


def relation_means(model, vocab, rows: list[tuple[str, str]], batch_size: int) -> tuple[list[str], np.ndarray, list[int]]:
    """(operator names, mean unbinding vector of each [n_ops, d_Rel], occurrences of each)."""
    sums: dict[int, torch.Tensor] = {}
    counts: dict[int, int] = {}
    for start in range(0, len(rows), batch_size):
        batch = vocab.collate(rows[start : start + batch_size])
        vectors = teacher_forced(model, batch.src, batch.tgt_in, [PROBE])[PROBE][-1]  # [B, T, d_Rel]
        gold = batch.tgt_out[..., 0]  # [B, T] the relation each step should produce
        for rel in gold.unique().tolist():
            if rel < len(RELATION_SPECIALS):  # pad, bos, eos, unk
                continue
            chosen = vectors[gold == rel]  # [n, d_Rel]
            sums[rel] = sums.get(rel, 0) + chosen.sum(dim=0)
            counts[rel] = counts.get(rel, 0) + chosen.size(0)
    ids = sorted(sums)
    return ([vocab.relations[i] for i in ids], torch.stack([sums[i] / counts[i] for i in ids]).float().numpy(),
            [counts[i] for i in ids])


def cluster_operators(means: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(k-means cluster of each operator's mean vector [n_ops], their 2-D PCA coordinates [n_ops, 2])."""
    k = max(1, min(k, len(means)))
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(means)
    dims = min(2, *means.shape)
    coords = PCA(n_components=dims, random_state=seed).fit_transform(means)
    return labels, np.pad(coords, ((0, 0), (0, 2 - dims)))


def members_table(names: list[str], labels: np.ndarray, counts: list[int]) -> pd.DataFrame:
    """One row per cluster: its operators (with their occurrences)."""
    rows = []
    for label in sorted(set(labels.tolist())):
        members = [f"{n} ({c})" for n, c, lab in zip(names, counts, labels) if lab == label]
        rows.append({"cluster": label, "size": len(members), "members": ", ".join(members)})
    return pd.DataFrame(rows)


def cluster_figure(names: list[str], labels: np.ndarray, coords: np.ndarray, path: Path, title: str) -> None:
    """`draw_clusters` saved as a PNG at `path`."""
    save(draw_clusters(names, labels, coords, title), path)


def label_groups(coords: np.ndarray, names: list[str], closeness: float = 0.03) -> list[tuple[np.ndarray, str]]:
    """The points' labels, one per group of points closer than `closeness` of the plot's extent
    (their names joined, at the group's first point), so that no two labels print over each other."""
    extent = max(float(np.ptp(coords[:, 0])), float(np.ptp(coords[:, 1])), 1e-12) if len(coords) else 1.0
    groups: list[tuple[np.ndarray, list[str]]] = []
    for point, name in zip(coords, names):
        near = next((group for group in groups if np.abs(group[0] - point).max() < closeness * extent), None)
        if near is None:
            groups.append((point, [name]))
        else:
            near[1].append(name)
    return [(point, ", ".join(members)) for point, members in groups]


def draw_clusters(names: list[str], labels: np.ndarray, coords: np.ndarray, title: str) -> plt.Figure:
    """The operators in their first two principal components, a colour per k-means cluster named in
    the legend (with its size), each label printed once beside its point (near points share one)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    cmap = plt.get_cmap("tab10")
    for label in sorted(set(labels.tolist())):
        chosen = labels == label
        ax.scatter(coords[chosen, 0], coords[chosen, 1], color=cmap(label % 10), s=18,
                   label=f"cluster {label} ({int(chosen.sum())})")
    for (x, y), text in label_groups(coords, names):
        ax.annotate(text, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title(title, fontsize=9)
    ax.legend(title="k-means cluster (operators)", fontsize=7, title_fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))  # beside the points, not over them
    return fig
