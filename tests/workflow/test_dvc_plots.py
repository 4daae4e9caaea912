"""`dvc plots show` draws what the files hold (the project's templates in .dvc/plots/): accuracy
from 0 to 100% per module, one panel per split and one bar per model, so rows sharing a module never
stack; learning curves as held-out exact match over steps; each run's charts titled with the run;
and its page renders offline (headless Chromium with every host unresolvable draws SVG marks)."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import chromium, copy_project, tool_env


def plots_project(tmp_path):
    """A copy of the project holding one model's evaluation and learning curve (no pipeline run)."""
    root = copy_project(tmp_path / "repo")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    evaluation = pd.DataFrame({"model": "transformer", "seed": 1, "module": ["numbers__place_value", "comparison__pair",
                                                                             "comparison__pair"],
                               "split": ["interpolate", "interpolate", "train"], "n": 10, "correct": [5, 9, 8],
                               "accuracy": [0.5, 0.9, 0.8]})
    for path in ("mathematics/eval/transformer-s1.csv", "results/tables/mathematics_modules.csv"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        evaluation.to_csv(root / path, index=False)
    curve = root / "mathematics/models/transformer-s1/learning_curve.csv"
    curve.parent.mkdir(parents=True)
    pd.DataFrame({"step": [500, 1000, 1500], "heldout_loss": [2.0, 1.5, 1.2], "heldout_exact_match": [0.1, 0.3, 0.5],
                  "n": 64}).to_csv(curve, index=False)
    return root


def test_dvc_plots_have_data_on_the_right_axes(tmp_path):
    root = plots_project(tmp_path)
    shown = subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "--json"], cwd=root, env=tool_env(),
                           capture_output=True, text=True, timeout=300)
    plots = json.loads(shown.stdout)["data"]  # the runs not written here are reported as missing files

    def spec(path):
        (entry,) = plots[path]
        content = entry["content"]
        return json.loads(content) if isinstance(content, str) else content

    for path in ("mathematics/eval/transformer-s1.csv", "results/tables/mathematics_modules.csv"):
        bars = spec(path)
        encoding = bars["encoding"]
        x, y = encoding["x"], encoding["y"]
        assert (x["field"], x["type"], y["field"], y["type"]) == ("accuracy", "quantitative", "module", "nominal"), path
        assert x["scale"]["domain"] == [0, 1], path  # 100% at most: no stacked bars
        assert encoding["row"]["field"] == "split" and encoding["yOffset"]["field"] == "series", path
        assert [float(row["accuracy"]) for row in bars["data"]["values"]] == [0.5, 0.9, 0.8], path
    assert spec("mathematics/eval/transformer-s1.csv")["title"]["text"].startswith("transformer seed 1,")
    assert "pooled over seeds" in spec("results/tables/mathematics_modules.csv")["title"]["text"]
    lines = spec("mathematics/models/transformer-s1/learning_curve.csv")
    assert lines["title"]["text"].startswith("transformer seed 1,")
    assert (lines["encoding"]["x"]["field"], lines["encoding"]["y"]["field"]) == ("step", "heldout_exact_match")
    assert lines["encoding"]["y"]["scale"]["domain"] == [0, 1]  # a curve at 0.14 keeps its ticks
    assert [float(row["heldout_exact_match"]) for row in lines["data"]["values"]] == [0.1, 0.3, 0.5]


def test_every_plot_uses_a_project_template_and_names_its_axes():
    """The templates dvc.yaml names exist in .dvc/plots/, and every plot says what its y axis is."""
    import yaml

    from helpers import REPO

    document = yaml.safe_load((REPO / "dvc.yaml").read_text())
    plots = [plot for entry in document["stages"].values() for plot in entry.get("do", entry).get("plots", [])]
    plots += document["plots"]
    for plot in plots:
        ((path, props),) = plot.items()
        assert (REPO / ".dvc" / "plots" / f"{props['template']}.json").is_file(), path
        assert props["y_label"] and props["title"], path

@pytest.mark.slow  # dvc and Chromium subprocesses
def test_dvc_plots_page_draws_its_charts_offline(tmp_path):
    root = plots_project(tmp_path)
    assert (root / ".dvc" / "offline_plots.html").is_file(), "run `make install` (tprepro plots-template)"
    shown = subprocess.run([sys.executable, "-m", "dvc", "plots", "show"], cwd=root, env=tool_env(),
                           capture_output=True, text=True, timeout=300)
    page = root / "dvc_plots" / "index.html"
    assert page.is_file(), shown.stderr[-3000:]
    assert "cdn.jsdelivr" not in page.read_text()
    dom = chromium(page.as_uri(), tmp_path / "profile", screenshot="dvc_plots", offline=True)
    charts = re.findall(r'<svg[^>]*class="marks".*?</svg>', dom, flags=re.S)
    marks = sorted(len(re.findall(r'role="graphics-symbol"', chart)) for chart in charts)
    # the plots of the runs not written here are empty; the three written are drawn: two bar
    # charts of 3 bars (two panels) and the learning curve (its line and its points)
    assert len([count for count in marks if count >= 2]) == 3, marks
