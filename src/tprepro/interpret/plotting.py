"""Figure plumbing shared by the analyses: the Agg backend and atomic PNG writes."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tprepro.io import atomic_path  # noqa: E402


SHOWN = {" ": "␣", "<s>": "#", "</s>": "%"}  # start / end as the paper's figures write them


def shown(symbol: str) -> str:
    """A symbol as figures draw it: a visible space, '#' / '%' for start / end of sequence."""
    return SHOWN.get(symbol, symbol)


def save(fig, path: Path) -> None:
    """Write `fig` as PNG to `path` atomically and close it."""
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


