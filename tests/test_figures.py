"""tprepro.figures: one colour per model name in every figure (tests/conftest.py checks that every
saved figure keeps its texts on the canvas)."""

import zlib
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import REPO
from tprepro.experiments.mathematics.figures import module_figure
from tprepro.figures import PALETTE, model_colours
from tprepro.report.curves import curve_figure

CONFIGS = [REPO / "params.yaml", *sorted((REPO / "workflow" / "configs").glob("*.yaml"))]


def model_sets(params: dict) -> dict[str, list[str]]:
    """The models each experiment draws together, by experiment."""
    sections = {"mathematics": (params.get("grid") or {}).get("models"),
                "two_variable": (params.get("two_variable") or {}).get("models"),
                "n2f": (params.get("n2f") or {}).get("models"),
                "summarization": (params.get("summarization") or {}).get("models")}
    return {name: list(models) for name, models in sections.items() if models}


@pytest.mark.parametrize("config", CONFIGS, ids=[path.name for path in CONFIGS])
def test_the_models_drawn_together_get_their_own_colours(config):
    """No two models of one experiment hash to one colour, so no figure has to move one aside."""
    for experiment, models in model_sets(yaml.safe_load(config.read_text())).items():
        hashed = {zlib.crc32(name.encode()) % len(PALETTE) for name in models}
        assert len(hashed) == len(models), (config.name, experiment, models)


def test_a_model_keeps_its_colour_across_figures_and_model_sets(tmp_path: Path, saved_figures):
    modules = pd.DataFrame({"model": ["tp_transformer", "transformer"], "module": "comparison__pair",
                            "split": "interpolate", "n": 10, "correct": [4, 6], "accuracy": [0.4, 0.6]})
    module_figure(modules, tmp_path / "modules.png", "per module")  # tp_transformer listed first
    curve = pd.DataFrame({"step": [1, 2], "heldout_loss": [2.0, 1.0], "heldout_exact_match": [0.1, 0.2], "n": 8})
    curve_figure({("transformer", 1): curve, ("tp_transformer", 1): curve}, tmp_path / "curves.png", "curves")
    bars, lines = saved_figures
    bar_colour = {bar.get_label(): bar.patches[0].get_facecolor()[:3] for bar in bars.axes[0].containers}
    line_colour = {line.get_label().split(" (")[0]: line.get_color() for line in lines.axes[0].get_lines()}
    colours = model_colours(["transformer", "tp_transformer"])
    for model in ("transformer", "tp_transformer"):
        assert tuple(bar_colour[model]) == tuple(line_colour[model]) == colours[model]
    assert model_colours(["transformer", "ut", "aut"])["transformer"] == colours["transformer"]


def test_two_models_that_hash_alike_still_get_two_colours():
    names = [f"m{i}" for i in range(40)]
    first = next(n for n in names if zlib.crc32(n.encode()) % len(PALETTE) == zlib.crc32(b"m0") % len(PALETTE)
                 and n != "m0")
    colours = model_colours(["m0", first])
    assert colours["m0"] != colours[first]


def test_a_title_that_runs_off_the_canvas_is_caught(tmp_path, saved_figures):
    from figure_checks import texts_off_the_canvas
    from tprepro.figures import plt

    fig, ax = plt.subplots(figsize=(3, 2))
    fig.suptitle("a title far too long for a figure three inches wide, clipped on both sides")
    fig.canvas.draw()
    assert texts_off_the_canvas(fig) == ["a title far too long for a figure three inches wide, clipped on both sides"]
    plt.close(fig)
