"""The report stage (results/report.html): every experiment's Reported outputs under their captions, in one
page that is complete on its own; its DVC deps cover every one of them, so a changed table or figure reruns it."""

import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import REPO, chromium, load_default_params, tool_env, write_params


def test_every_reported_output_lies_under_a_dep_of_the_report_stage():
    from tprepro.experiments import Reported, experiments, stage
    from tprepro.experiments.html_report.cli import CAPTIONS, LEFT_OUT, REPORTED

    deps = stage("report").dvc[0].deps
    assert deps == (CAPTIONS, *REPORTED)
    reported = [path for experiment in experiments().values() for each in experiment.stages for dvc in each.dvc
                for path in dvc.written if isinstance(path, Reported)]
    assert len(reported) > 10
    assert [path for path in reported if not any(path.startswith(f"{folder}/") for folder in REPORTED + LEFT_OUT)] == []
    assert all((REPO / CAPTIONS / f"{path.caption}.rst").is_file() for path in reported)


def write_outputs(root) -> None:
    """A few of the outputs the report shows, as their stages write them: a table page, a CSV, a figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tprepro.report.html import markdown_page

    tables = root / "results/tables"
    tables.mkdir(parents=True)
    markdown = "| model | interpolation |\n|---|---|\n| <script>alert(1)</script> | 0.5 |\n"
    (tables / "table1.html").write_text(markdown_page(markdown, "Table 1"))
    (tables / "algolisp.html").write_text(markdown_page("| model | acc |\n|---|---|\n| tp_n2f | 0.25 |\n", "AlgoLisp"))
    pd.DataFrame({"model": ["transformer"], "module": ["numbers__place_value"], "accuracy": [0.5]}).to_csv(
        tables / "mathematics_modules.csv", index=False)
    figures = root / "results/figures"
    figures.mkdir(parents=True)
    figure, axes = plt.subplots(figsize=(3, 2), layout="constrained")
    axes.plot([0, 1], [0, 1])
    figure.savefig(figures / "learning_curves.png")
    plt.close(figure)


def test_the_report_shows_each_output_under_its_caption_and_names_the_missing(tmp_path):
    params = load_default_params()
    write_params(tmp_path / "params.yaml", params)
    write_outputs(tmp_path)
    result = subprocess.run([sys.executable, "-m", "tprepro", "report", "--captions", str(REPO / "workflow/report"),
                             "--out", "results/report.html"], cwd=tmp_path, env=tool_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "results/report.html").read_text()
    sections = re.findall(r'<h2 id="section-\d+">([^<]+)</h2>', page)
    assert sections == ["Mathematics Dataset", "TP-N2F", "Summarization", "Two-variable arithmetic",
                        "Interpretation"], sections  # the papers' own, then the one they share
    assert "One row per model: parameter count, training steps" in page  # table1.rst, rendered
    assert "TP-N2F, task <span class=\"docutils literal\">algolisp</span>" in page  # its {{ snakemake.wildcards.task }}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page  # data stays text
    assert page.count("data:image/png;base64,") == 1  # the one figure written, embedded
    assert "<td>numbers__place_value</td>" in page  # a CSV as a table
    assert "results/figures/mathematics_modules.png: missing" in page  # the outputs not written are named
    assert "reported outputs -> results/report.html" in result.stdout


@pytest.mark.slow  # Chromium
def test_the_report_page_draws_offline(tmp_path):
    """The page needs nothing but itself: headless Chromium with no host resolvable shows the table and figure."""
    write_params(tmp_path / "params.yaml", load_default_params())
    write_outputs(tmp_path)
    subprocess.run([sys.executable, "-m", "tprepro", "report", "--captions", str(REPO / "workflow/report"),
                    "--out", "report.html"], cwd=tmp_path, env=tool_env(), check=True, capture_output=True, timeout=300)
    dom = chromium((tmp_path / "report.html").as_uri(), tmp_path / "profile", screenshot=tmp_path / "report.png",
                   offline=True)
    assert "<td>tp_n2f</td>" in dom and re.search(r'<img alt="learning_curves.png" src="data:image/png', dom)
    assert (tmp_path / "report.png").stat().st_size > 0
