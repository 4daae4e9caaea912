"""Role clusters (Schlag et al. Sec. 5.1, Fig. 3): k-means over the role vectors r^h of one head of
one encoder layer, at every real source position of sampled problems; each problem drawn as its
character row coloured by cluster, and a table of each cluster's most frequent characters and contexts."""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans

from tprepro.data.batching import collate
from tprepro.figures import plt, save
from tprepro.interpret.hooks import layer_name, source_labels, teacher_forced
from tprepro.interpret.plotting import shown

TOP = 5  # characters / contexts listed per cluster


@dataclass
class RoleClusters:
    characters: list[list[str]]  # per problem: its source symbols
    labels: list[list[int]]  # per problem: the cluster of each symbol
    vectors: np.ndarray  # [N_positions, d] role vectors, problems concatenated


def role_proj_name(model, layer: int) -> str:
    return f"{layer_name(model, 'encoder', layer)}.self_attn.binding.role_proj"


def has_role_vectors(model, layer: int) -> bool:
    """Whether the model computes role vectors r^h (continuous or full-tensor TP-attention)."""
    return hasattr(model, "encoder") and role_proj_name(model, layer) in dict(model.named_modules())


def role_vectors(model, vocab, rows: list[tuple[str, str]], layer: int, head: int) -> tuple[list[list[str]], np.ndarray]:
    """(source symbols per problem, role vectors of `head` at their positions [N_positions, d])."""
    name = role_proj_name(model, layer)
    batch = collate(rows, vocab)
    roles = teacher_forced(model, batch.src, batch.tgt_in, [name])[name][-1]  # [B, S, H * d]
    heads = model.cfg.n_heads
    per_head = roles.unflatten(-1, (heads, roles.size(-1) // heads))[:, :, head]  # [B, S, d]
    real = batch.src != vocab.pad_id  # [B, S]
    return source_labels(vocab, batch.src), per_head[real].float().numpy()


def kmeans_labels(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means cluster of each row of `vectors` (k capped at the number of distinct rows)."""
    distinct = len(np.unique(vectors.round(6), axis=0))
    return KMeans(n_clusters=max(1, min(k, distinct)), n_init=10, random_state=seed).fit_predict(vectors)


def cluster_roles(model, vocab, rows, layer: int, head: int, k: int, seed: int) -> RoleClusters:
    characters, vectors = role_vectors(model, vocab, rows, layer, head)
    flat = kmeans_labels(vectors, k, seed).tolist()
    labels, start = [], 0
    for symbols in characters:
        labels.append(flat[start : start + len(symbols)])
        start += len(symbols)
    return RoleClusters(characters, labels, vectors)


def cluster_table(clusters: RoleClusters) -> pd.DataFrame:
    """One row per cluster: its size and most frequent characters and contexts (previous, self, next)."""
    chars: dict[int, Counter] = {}
    contexts: dict[int, Counter] = {}
    for symbols, labels in zip(clusters.characters, clusters.labels):
        padded = ["", *symbols, ""]
        for t, label in enumerate(labels):
            chars.setdefault(label, Counter())[symbols[t]] += 1
            contexts.setdefault(label, Counter())[f"{padded[t]}[{symbols[t]}]{padded[t + 2]}"] += 1

    def top(counter: Counter) -> str:
        return " ".join(f"{symbol!r}:{count}" for symbol, count in counter.most_common(TOP))

    return pd.DataFrame([{"cluster": label, "size": sum(chars[label].values()), "characters": top(chars[label]),
                          "contexts": top(contexts[label])} for label in sorted(chars)])


def cluster_figure(clusters: RoleClusters, path: Path, title: str, max_rows: int = 16) -> None:
    """Each problem as a row of boxes, one per symbol, coloured and numbered by role cluster; the
    legend beside them names each cluster's most frequent symbols."""
    problems = list(zip(clusters.characters, clusters.labels))[:max_rows]
    width = max(len(symbols) for symbols, _ in problems)
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(max(4.0, 0.28 * width) + 2.2, 0.4 * len(problems) + 0.8))
    for i, (symbols, labels) in enumerate(problems):
        for j, (symbol, label) in enumerate(zip(symbols, labels)):
            ax.add_patch(plt.Rectangle((j, -i - 1), 1, 1, color=cmap(label % 20), alpha=0.8))
            ax.text(j + 0.5, -i - 0.45, shown(symbol), ha="center", va="center",
                    fontsize=7)
            ax.text(j + 0.5, -i - 0.88, str(label), ha="center", va="center", fontsize=4)
    ax.set_xlim(0, width)
    ax.set_ylim(-len(problems), 0)
    ax.axis("off")
    ax.set_title(textwrap.fill(title, 90), fontsize=9)
    symbols: dict[int, Counter] = {}
    for row, labels in problems:
        for symbol, label in zip(row, labels):
            symbols.setdefault(label, Counter())[shown(symbol)] += 1
    handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(label % 20), alpha=0.8) for label in sorted(symbols)]
    names = [f"{label}: {' '.join(s for s, _ in symbols[label].most_common(4))}" for label in sorted(symbols)]
    ax.legend(handles, names, title="role cluster: its commonest symbols", fontsize=6, title_fontsize=7,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=1 + len(names) // 24)
    save(fig, path)
