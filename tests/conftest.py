"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from figure_checks import texts_off_the_canvas
from finished_project import finished  # noqa: F401  (a fixture: the micro project run to the end once per session)

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
