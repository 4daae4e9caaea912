"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def generate_python() -> str:
    """The generation interpreter ($TPREPRO_GENERATE_PYTHON or .venv-gen); fails if absent."""
    configured = os.environ.get("TPREPRO_GENERATE_PYTHON")
    path = Path(configured) if configured else REPO / ".venv-gen" / "bin" / "python"
    if not path.exists():
        pytest.fail(
            f"no generation interpreter at {path}: run `make install` "
            "or set TPREPRO_GENERATE_PYTHON to a python with mathematics-dataset==1.0.1"
        )
    return str(path)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: a second intra-op thread costs more than it saves (and stalls under load)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _within(inner, outer, slack: float = 0.0) -> bool:
    return (inner.x0 >= outer.x0 - slack and inner.y0 >= outer.y0 - slack and inner.x1 <= outer.x1 + slack
            and inner.y1 <= outer.y1 + slack)


def texts_off_the_canvas(fig) -> list[str]:
    """What `fig` draws past its canvas, by label: its drawn extent (ticks in view, legends, titles,
    unclipped labels; matplotlib's tight bounding box) against the canvas, the texts that overflow named."""
    renderer = fig.canvas.get_renderer()
    drawn, canvas = fig.get_tightbbox(renderer), fig.bbox_inches  # inches
    if _within(drawn, canvas, slack=0.01):
        return []
    texts = [fig._suptitle, *(text for ax in fig.axes for text in (ax.title, ax.xaxis.label, ax.yaxis.label)),
             *(text for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if legend
               for text in legend.get_texts())]
    named = [text.get_text() for text in texts if text is not None and text.get_text().strip()
             and not _within(text.get_window_extent(renderer), fig.bbox)]
    return named or [f"something drawn over {drawn.bounds} (x, y, width, height, inches) on a canvas of {canvas.bounds}"]


@pytest.fixture(autouse=True)
def saved_figures(monkeypatch):
    """Every figure a test saves: checked to keep its texts on the canvas, and listed for the test."""
    from matplotlib.figure import Figure

    saved = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        original(self, *args, **kwargs)
        outside = texts_off_the_canvas(self)
        assert not outside, f"figure texts run off the canvas: {outside}"
        saved.append(self)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved
