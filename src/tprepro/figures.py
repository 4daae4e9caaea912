"""What every figure shares: the Agg backend, one colour per model name, atomic PNG writes."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tprepro.io import atomic_path  # noqa: E402

PALETTE = tuple(plt.get_cmap("tab10").colors)  # ten qualitative colours, as RGB tuples


def model_colours(models: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """Each model's colour, keyed by its name (a hash of it picks one of PALETTE), so a model has the
    same colour in every figure; should two models of one figure hash alike, the later in sorted
    order takes the next free colour (the shipped configurations have no such pair: tests/test_figures.py)."""
    taken: set[int] = set()
    colours = {}
    for name in sorted(set(models)):
        index = zlib.crc32(name.encode()) % len(PALETTE)
        while index in taken and len(taken) < len(PALETTE):
            index = (index + 1) % len(PALETTE)
        taken.add(index)
        colours[name] = PALETTE[index]
    return colours


def save(fig: plt.Figure, path: Path, dpi: int = 120) -> None:
    """Lay `fig` out, write it as PNG to `path` atomically, and close it."""
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    plt.close(fig)
