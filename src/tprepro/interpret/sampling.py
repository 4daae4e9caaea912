"""Seeded samples of dataset rows, streamed shard by shard (never the whole dataset in memory)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from tprepro.data.shards import Dataset, iter_rows
from tprepro.errors import TpreproError


def reservoir(rows: Iterable[dict], n: int, seed: int | str) -> list[dict]:
    """A uniform sample of `n` items of `rows` (all of them if fewer), in their original order."""
    rng = random.Random(seed)
    kept: list[tuple[int, dict]] = []
    for index, row in enumerate(rows):
        if index < n:
            kept.append((index, row))
        else:
            slot = rng.randint(0, index)
            if slot < n:
                kept[slot] = (index, row)
    return [row for _, row in sorted(kept, key=lambda item: item[0])]


def sample_rows(dataset: Dataset, n: int, seed: int | str,
                columns: Sequence[str] = ("question", "answer")) -> list[dict]:
    """`n` rows of `dataset` (a reservoir sample over the streamed shards)."""
    rows = reservoir(iter_rows(dataset, columns), n, seed)
    if not rows:
        raise TpreproError(f"{dataset.directory}: no rows to interpret")
    return rows


def pairs(rows: Sequence[dict]) -> list[tuple[str, str]]:
    """(question, answer) of each row."""
    return [(row["question"], row["answer"]) for row in rows]
