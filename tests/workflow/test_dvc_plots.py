"""`dvc plots show` draws what the files hold (the project's templates in .dvc/plots/): accuracy
from 0 to 100% per module, one panel per split and one bar per model, so rows sharing a module never
stack; learning curves as held-out exact match over steps; every run's curve of an experiment
overlaid in one chart, a colour per model (the matplotlib figures' colours) and a dash per seed;
each chart titled with its experiment (and run); its page renders offline (headless Chromium with
every host unresolvable draws SVG marks); `dvc plots diff` colours each revision alike in every
chart (DVC's colour of the revision) and tells baseline and workspace runs apart in the overlay;
and `dvc metrics show` names experiment, metric and model."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import chromium, copy_project, readme_compare_line, tool_env

MODELS = ("transformer", "tp_transformer")


def plots_project(tmp_path):
    """A copy of the project holding one run's evaluation and learning curve, and the tables stage's
    plot data and metrics over two models and two seeds, written by its own functions (no pipeline run)."""
    from tprepro.report.plots import write_bars, write_curves
    from tprepro.report.tables import headline_metrics, module_table, write_metrics

    root = copy_project(tmp_path / "repo")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    evaluation = pd.DataFrame({"model": "transformer", "seed": 1, "module": ["numbers__place_value", "comparison__pair",
                                                                             "comparison__pair"],
                               "split": ["interpolate", "interpolate", "train"], "n": 10, "correct": [5, 9, 8],
                               "accuracy": [0.5, 0.9, 0.8]})
    (root / "mathematics/eval").mkdir(parents=True)
    evaluation.to_csv(root / "mathematics/eval/transformer-s1.csv", index=False)
    curve = root / "mathematics/models/transformer-s1/learning_curve.csv"
    curve.parent.mkdir(parents=True)
    pd.DataFrame({"step": [500, 1000, 1500], "heldout_loss": [2.0, 1.5, 1.2], "heldout_exact_match": [0.1, 0.3, 0.5],
                  "n": 64}).to_csv(curve, index=False)
    both = pd.concat([evaluation, evaluation.assign(model="tp_transformer", correct=[6, 10, 9],
                                                    accuracy=[0.6, 1.0, 0.9])], ignore_index=True)
    (root / "results/plots").mkdir(parents=True)
    write_bars(module_table(both), root / "results/plots/mathematics.csv")
    write_curves({(model, seed): pd.DataFrame({"step": [500, 1000], "heldout_loss": [2.0, 1.0], "n": 64,
                                               "heldout_exact_match": [0.1 * seed, 0.2 * seed + 0.1 * index]})
                  for index, model in enumerate(MODELS) for seed in (1, 2)}, root / "results/plots/mathematics_curves.csv")
    table = [{"model": "tp_transformer", "interpolation_acc": 0.6}, {"model": "transformer", "interpolation_acc": 0.5}]
    write_metrics(headline_metrics(table, "mathematics", {"interpolation_acc": "interpolation_acc"}),
                  root / "results/metrics.json")
    return root


def hex_colours() -> dict[str, str]:
    """Each model's colour in the matplotlib figures."""
    from matplotlib.colors import to_hex

    from tprepro.figures import model_colours

    return {model: to_hex(colour) for model, colour in model_colours(MODELS).items()}


def test_dvc_metrics_show_names_experiment_metric_and_model(tmp_path):
    root = plots_project(tmp_path)
    shown = subprocess.run([sys.executable, "-m", "dvc", "metrics", "show", "results/metrics.json"], cwd=root,
                           env=tool_env(), capture_output=True, text=True, timeout=300)
    header, row = shown.stdout.splitlines()[:2]
    assert header.split() == ["Path", "mathematics.interpolation_acc.tp_transformer",
                              "mathematics.interpolation_acc.transformer"], shown.stdout + shown.stderr
    assert row.split() == ["results/metrics.json", "0.6", "0.5"]


def test_dvc_plots_have_data_on_the_right_axes(tmp_path):
    root = plots_project(tmp_path)
    shown = subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "--json"], cwd=root, env=tool_env(),
                           capture_output=True, text=True, timeout=300)
    plots = json.loads(shown.stdout)["data"]  # the runs not written here are reported as missing files

    def spec(path):
        (entry,) = plots[path]
        content = entry["content"]
        return json.loads(content) if isinstance(content, str) else content

    # a run's bars: a module per row, a bar per revision; every model's: a module (and model, comparing) per row
    for path, rows, offset in (("mathematics/eval/transformer-s1.csv", "module", "rev"),
                               ("results/plots/mathematics.csv", "row_label", "hue")):
        bars = spec(path)
        encoding = bars["encoding"]
        x, y = encoding["x"], encoding["y"]
        assert (x["field"], x["type"], y["field"], y["type"]) == ("accuracy", "quantitative", rows, "nominal"), path
        assert x["scale"]["domain"] == [0, 1], path  # 100% at most: no stacked bars
        assert encoding["row"]["field"] == "split" and encoding["yOffset"]["field"] == offset, path
    assert [float(row["accuracy"]) for row in spec("mathematics/eval/transformer-s1.csv")["data"]["values"]] == [
        0.5, 0.9, 0.8]
    assert spec("mathematics/eval/transformer-s1.csv")["title"]["text"].startswith(
        "Mathematics Dataset: transformer seed 1,")
    every_model = spec("results/plots/mathematics.csv")
    assert every_model["title"]["text"].startswith("Mathematics Dataset:")
    assert {(row["model"], row["colour"]) for row in every_model["data"]["values"]} == set(hex_colours().items())
    lines = spec("mathematics/models/transformer-s1/learning_curve.csv")
    assert lines["title"]["text"].startswith("Mathematics Dataset: transformer seed 1,")
    assert (lines["encoding"]["x"]["field"], lines["encoding"]["y"]["field"]) == ("step", "heldout_exact_match")
    assert lines["encoding"]["y"]["scale"]["domain"] == [0, 1]  # a curve at 0.14 keeps its ticks
    assert [float(row["heldout_exact_match"]) for row in lines["data"]["values"]] == [0.1, 0.3, 0.5]
    overlay = spec("results/plots/mathematics_curves.csv")  # every run of the experiment in one chart
    assert overlay["title"]["text"].startswith("Mathematics Dataset:")
    encoding = overlay["encoding"]  # a colour per model and a dash per seed; comparing, per revision and model
    assert (encoding["color"]["field"], encoding["strokeDash"]["field"]) == ("hue", "dash")
    assert {transform.get("as"): transform.get("calculate") for transform in overlay["transform"]}["dash"] == (
        "datum.revisions > 1 ? datum.model : 'seed ' + datum.seed")
    assert {(row["model"], row["seed"]) for row in overlay["data"]["values"]} == {
        (model, str(seed)) for model in MODELS for seed in (1, 2)}


def test_every_plot_uses_a_project_template_and_names_its_axes():
    """The templates dvc.yaml names exist in .dvc/plots/, and every plot says what its y axis is."""
    import yaml

    from helpers import REPO

    document = yaml.safe_load((REPO / "dvc.yaml").read_text())
    plots = [plot for entry in document["stages"].values() for plot in entry.get("do", entry).get("plots", [])]
    for plot in plots:
        ((path, props),) = plot.items()
        assert (REPO / ".dvc" / "plots" / f"{props['template']}.json").is_file(), path
        assert props["y_label"] and props["title"], path

def every_headline(root) -> set[str]:
    """Each experiment's headline metrics file, named as its tables stage names them; their columns
    (DVC shows those of the stages in dvc.yaml)."""
    from helpers import load_default_params
    from tprepro.experiments.n2f.tasks import get_task
    from tprepro.report.tables import headline_metrics, write_metrics

    params = load_default_params()
    headlines = {"two_variable_metrics.json": ("two_variable", {"overall_acc": "x"}),
                 "summarization_metrics.json": ("summarization", {"xsum.rougeL": "x"}),
                 **{f"{task}_metrics.json": (task, {get_task(task).headline(params["n2f"][task]["data"]): "x"})
                    for task in ("mathqa", "algolisp")}}
    for name, (label, columns) in headlines.items():
        write_metrics(headline_metrics([{"model": "tp_x", "x": 0.5}], label, columns), root / "results" / name)
    return {f"{label}.{metric}.tp_x" for label, columns in headlines.values() for metric in columns}


def test_the_readmes_compare_line_shows_every_headline_and_only_changed_settings(tmp_path):
    """README's comparison line: a row per headline metric of every experiment and, the workspace and its
    commit having one params.yaml, no setting; within 160 columns."""
    root = plots_project(tmp_path)
    headlines = every_headline(root) | {f"mathematics.interpolation_acc.{model}" for model in MODELS}
    expected = {name for name in headlines if not name.startswith("mathqa.")}  # not in dvc.yaml by default
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline"], cwd=root,
                   check=True)
    shown = subprocess.run([sys.executable, "-m", "tprepro", *readme_compare_line()[1:]], cwd=root, env=tool_env(),
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    lines = shown.stdout.splitlines()
    assert len(lines[0].split()) == 2 and lines[0].split()[0] == "workspace", lines[0]  # a column per revision
    assert {line.split()[0] for line in lines[1:]} == expected, shown.stdout
    assert max(map(len, lines)) <= 160, shown.stdout


def drawn_charts(dom: str) -> list[str]:
    return re.findall(r'<svg[^>]*class="marks".*?</svg>', dom, flags=re.S)


def marks(chart: str, kind: str) -> list[str]:
    """The SVG paths of `chart`'s marks of `kind` (line, symbol, rect): one per line, point or bar."""
    groups = re.findall(rf'<g[^>]*class="mark-{kind} role-mark[^"]*"[^>]*>(.*?)</g>', chart, flags=re.S)
    return [path for group in groups for path in re.findall(r'<path[^>]*>', group)]


def colour_of(path: str, attribute: str) -> str:
    return re.search(rf'{attribute}="([^"]+)"', path).group(1).lower()


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
    charts = drawn_charts(dom)
    counts = sorted(len(re.findall(r'role="graphics-symbol"', chart)) for chart in charts)
    # the plots of the runs not written here are empty; the four written are drawn: the run's bar
    # chart (3 bars in two panels) and learning curve (its line and its points), the experiment's
    # bars (6: two models) and its overlay (4 lines and 8 points)
    assert len([count for count in counts if count >= 2]) == 4, counts
    colours = hex_colours()
    overlay = next(chart for chart in charts if len(marks(chart, "line")) == 4)
    assert sorted(colour_of(line, "stroke") for line in marks(overlay, "line")) == sorted(2 * list(colours.values()))
    assert len({re.search(r'stroke-dasharray="([^"]*)"', line) and
                re.search(r'stroke-dasharray="([^"]*)"', line).group(1) for line in marks(overlay, "line")}) == 2
    bars = next(chart for chart in charts if len(marks(chart, "rect")) == 6)
    tooltip = {colour_of(bar, "fill"): bar for bar in marks(bars, "rect")}
    assert set(tooltip) == set(colours.values())  # the figures' colour of each model
    for model, colour in colours.items():  # and the bar of that colour is that model's
        assert f"model: {model}" in tooltip[colour].replace("&quot;", ""), tooltip[colour]


def revision_colours(chart: str) -> dict[str, set[str]]:
    """{revision: colours of its marks} in `chart` (its lines' strokes and bars' fills; a mark's aria-label,
    its tooltip, names its revision)."""
    found: dict[str, set[str]] = {}
    for kind, attribute in (("line", "stroke"), ("rect", "fill")):
        for mark in marks(chart, kind):
            revision = re.search(r'aria-label="[^"]*\b(?:rev|revision): ([^;"]+)', mark)
            if revision:
                found.setdefault(revision.group(1), set()).add(colour_of(mark, attribute))
    return found


@pytest.mark.slow  # git, dvc and Chromium subprocesses
def test_dvc_plots_diff_colours_each_revision_alike_in_every_chart(tmp_path):
    """`dvc plots diff baseline` as README's comparison runs it, on two revisions of every plot file:
    each revision has one colour, the same in the learning curves, a run's bars, every model's bars and
    the overlay; the overlay's lines of the two revisions differ; and git sees no dvc_plots/ page."""
    root = plots_project(tmp_path)
    plotted = ["mathematics/eval/transformer-s1.csv", "mathematics/models/transformer-s1/learning_curve.csv",
               "results/plots/mathematics.csv", "results/plots/mathematics_curves.csv"]
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "add", "-f", *plotted], cwd=root, check=True, capture_output=True)  # as DVC would restore them
    subprocess.run([*git, "commit", "-qm", "baseline"], cwd=root, check=True)
    subprocess.run([*git, "tag", "baseline"], cwd=root, check=True)
    for path in plotted:  # the workspace's experiment: every score halved
        frame = pd.read_csv(root / path)
        score = "accuracy" if "accuracy" in frame else "heldout_exact_match"
        frame.assign(**{score: frame[score] / 2}).to_csv(root / path, index=False)
    shown = subprocess.run([sys.executable, "-m", "dvc", "plots", "diff", "baseline"], cwd=root, env=tool_env(),
                           capture_output=True, text=True, timeout=300)
    page = root / "dvc_plots" / "index.html"
    assert page.is_file(), shown.stderr[-3000:]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    assert "dvc_plots" not in status, status  # README's `git add -A` leaves the page out

    dom = chromium(page.as_uri(), tmp_path / "profile", screenshot=tmp_path / "dvc_plots_diff.png", offline=True)
    charts = [revision_colours(chart) for chart in drawn_charts(dom)]
    drawn = [chart for chart in charts if chart]
    assert len(drawn) == 4, charts  # the run's curve and bars, every model's bars, the overlay
    assert all(chart.keys() == {"baseline", "workspace"} for chart in drawn), drawn
    assert all(len(colours) == 1 for chart in drawn for colours in chart.values()), drawn  # one colour each
    assert all(chart == drawn[0] for chart in drawn), drawn  # and the same one in every chart
    assert drawn[0]["baseline"] != drawn[0]["workspace"]
    overlay = next(chart for chart in drawn_charts(dom) if len(marks(chart, "line")) == 8)  # 2 models x 2 seeds x 2
    styles = {re.search(r'model: ([^;"]+); seed: ([^;"]+); revision: ([^;"]+)', line).groups():
              (colour_of(line, "stroke"), re.search(r'stroke-dasharray="([^"]*)"', line).group(1))
              for line in marks(overlay, "line")}
    assert len(styles) == 8, styles  # every run of each revision drawn
    by_revision_and_model = {(revision, model): style for (model, _, revision), style in styles.items()}
    assert len(set(by_revision_and_model.values())) == 4, styles  # a colour per revision, a dash per model
