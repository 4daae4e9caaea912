"""End to end on a temporary copy of the project: the real generator, Snakemake, DVC and MLflow.

A micro configuration (2 modules, 1 extrapolation module, a few steps) keeps each run short.
"""

import contextlib
import copy
import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
import yaml

from helpers import REPO, copy_project, experiment_name, write_params
from pipeline_kit import check_results, dvc, micro_params, planned_jobs, run, snakemake
from tprepro.evaluate.answering import answer

pytestmark = pytest.mark.slow


def check_mlflow(root, params) -> None:
    """The runs in the project's local store, read from the project folder (artifact locations
    are project-relative, as for `mlflow ui` started there)."""
    with contextlib.chdir(root):
        _check_mlflow(root, params)


def _check_mlflow(root, params) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(experiment_name(params))
    runs = client.search_runs([experiment.experiment_id])
    names = {r.info.run_name for r in runs}
    assert {"transformer-s1", "tp_transformer-s1", "tables"} <= names
    train_run = next(r for r in runs if r.info.run_name == "tp_transformer-s1")
    assert train_run.data.params["model.binding"] == "continuous_role"
    assert {"acc.interpolate.mean", "acc.extrapolate.mean"} <= set(train_run.data.metrics)  # a few headline metrics;
    assert not any(k.count(".") == 2 and not k.endswith(".mean") for k in train_run.data.metrics if k.startswith("acc."))
    assert [a.path for a in client.list_artifacts(train_run.info.run_id, "evaluation")] == [
        "evaluation/tp_transformer-s1.csv"]  # the per-module accuracies: a table artifact
    assert not any(k.startswith("data.") for k in train_run.data.tags)  # the dataset inputs carry the digests
    assert len(client.get_metric_history(train_run.info.run_id, "loss")) == 4  # every 3 of 12 steps
    curve = client.get_metric_history(train_run.info.run_id, "heldout_exact_match")
    assert [m.step for m in curve] == sorted({m.step for m in curve}) and curve[-1].step == 12  # per checkpoint
    assert train_run.data.tags["mlflow.note.content"].startswith("**tp_transformer** (arch `tp_transformer`")
    tables_run = next(r for r in runs if r.info.run_name == "tables")
    assert "table.tp_transformer.interpolation_acc" in tables_run.data.metrics  # the table's, over seeds
    artifacts = {a.path for a in client.list_artifacts(tables_run.info.run_id, "results")}
    assert "results/table1.md" in artifacts
    assert [a.path for a in client.list_artifacts(tables_run.info.run_id, "logs")] == ["logs/tables.log"]

    # the experiment: described, a training experiment, its artifacts inside the project (relative)
    description = experiment.tags["mlflow.note.content"]  # shown as written: plain text
    assert description.startswith("Schlag et al.") and not {"**", "`"} & {description[i:i + n] for n in (1, 2)
                                                                          for i in range(len(description))}
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    assert experiment.artifact_location == f"mlartifacts/{experiment.experiment_id}"
    run_dir = root / "mlartifacts" / experiment.experiment_id / train_run.info.run_id / "artifacts"
    model_dir = root / "mathematics/models/tp_transformer-s1"
    (logged,) = [m for m in client.search_logged_models([experiment.experiment_id])
                 if m.source_run_id == train_run.info.run_id]  # under Logged models (evaluate/pyfunc.py)
    assert (logged.name, logged.model_type) == (f"{experiment.name}-tp_transformer-s1", "pyfunc")  # its run's name
    stored = root / logged.artifact_location.removeprefix("file://")
    assert (stored / "artifacts/tprepro_model/model.pt").read_bytes() == (model_dir / "model.pt").read_bytes()
    assert {"MLmodel", "input_example.json"} <= {path.name for path in stored.iterdir()}
    # the MLflow model answers as `tprepro predict` does (issue 23)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    try:
        questions = ["What is 3 + 5?", "What is -2 + 7?"]
        answers = mlflow.pyfunc.load_model(f"runs:/{train_run.info.run_id}/{logged.name}").predict(questions)
    finally:
        mlflow.set_tracking_uri(previous)
    assert answers == answer(model_dir, questions)
    assert (run_dir / "logs" / "tp_transformer-s1.log").is_file()
    inputs = {d.dataset.name: d.dataset for d in train_run.inputs.dataset_inputs}
    assert set(inputs) == {f"{split}/{module}" for split in ("train-easy", "train-medium", "train-hard")
                           for module in params["grid"]["modules"]}
    some = sorted(inputs)[0]
    assert json.loads(inputs[some].source)["uri"] == f"data/mathematics/{some}"
    assert json.loads(inputs[some].profile)["sha256"].startswith(inputs[some].digest)
    parent = client.get_run(train_run.data.tags["mlflow.parentRunId"])
    assert parent.info.run_name == "pipeline" and parent.info.status == "FINISHED"
    assert parent.data.metrics == {}  # no copy of its children's metrics

    # each experiment its own MLflow experiment: nothing of the others' runs here
    assert not any(name.startswith(("two_variable/", "algolisp/")) for name in names)


# One setting of each experiment, as `snakemake --config` takes it and as `dvc exp run -S` does.
EACH_EXPERIMENTS_KEY = {"mathematics": "train={steps: 60}", "two_variable": "two_variable={train: {steps: 5}}",
                        "summarization": "summarization={train: {steps: 5}}"}  # N2F: tests/experiments/n2f
EACH_EXPERIMENTS_DVC_KEY = {"mathematics": "train.steps=60", "two_variable": "two_variable.train.steps=5",
                            "summarization": "summarization.train.steps=5"}




def readme_compare() -> list[str]:
    """README's `tprepro compare` line: a column per experiment, the headlines and the settings that differ."""
    (line,) = [line.split("#")[0] for line in (REPO / "README.md").read_text().splitlines()
               if line.startswith("tprepro compare")]
    return shlex.split(line)


def rules_of(experiment: str) -> set[str]:
    """The rules a setting of `experiment` may rerun: its own stages' and the HTML report's, which shows
    every experiment's outputs."""
    from tprepro.experiments import experiments

    return {stage.rule for name in (experiment, "html_report") for stage in experiments()[name].stages}


def active_runs(root) -> int:
    """The number of MLflow runs in the project's local store that are not deleted."""
    with sqlite3.connect(root / "mlflow.db") as db:
        return db.execute("SELECT COUNT(*) FROM runs WHERE lifecycle_stage = 'active'").fetchone()[0]


@pytest.fixture()
def project(tmp_path):
    root = copy_project(tmp_path / "repo")
    params = micro_params()
    write_params(root / "params.yaml", params)
    return root, params


def test_snakemake_pipeline_end_to_end(project, generate_python):
    root, params = project
    snakemake(root, generate_python)  # what each stage runs and reads: tests/workflow/rerun_oracle.py
    check_results(root, params)
    check_mlflow(root, params)

    assert "Nothing to be done" in snakemake(root, generate_python, "-n")

    # `make run`'s last step records the run for DVC without rewriting any output: afterwards both
    # tools call everything up to date and every output keeps its bytes and mtime (issue 23).
    run(["git", "init", "-q"], root, generate_python)
    made = {path: (path.stat().st_mtime_ns, path.read_bytes()) for folder in ("mathematics", "results", "data")
            for path in sorted((root / folder).rglob("*")) if path.is_file()}
    run(["make", "--no-print-directory", "dvc-commit", f"BIN={Path(sys.executable).parent}"], root, generate_python)
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in made} == made
    assert "up to date" in dvc(root, generate_python, "status").lower()
    assert "Nothing to be done" in snakemake(root, generate_python, "-n")
    # run again for real: no job, no file rewritten, no MLflow run left behind (an idle parent run is deleted)
    active = active_runs(root)
    assert "Nothing to be done" in snakemake(root, generate_python)
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in made} == made
    assert active_runs(root) == active
    shown = dvc(root, generate_python, "metrics", "show")  # each column names experiment, metric and model
    assert "results/metrics.json" in shown and "mathematics.interpolation_acc.tp_transformer" in shown, shown
    one = dvc(root, generate_python, "metrics", "show", "results/metrics.json")  # one experiment: one short line
    assert len(one.splitlines()) == 2 and max(map(len, one.splitlines())) <= 200, one

    # a setting reruns only the stages that read it: one key of each experiment (issue 45)
    for experiment, override in EACH_EXPERIMENTS_KEY.items():
        planned = planned_jobs(snakemake(root, generate_python, "-n", "--config", override))
        assert planned.keys() - {"all"} and planned.keys() - {"all"} <= rules_of(experiment), (override, planned)

    params["models"]["tp_transformer"]["d_ff"] = 24  # one model's setting
    write_params(root / "params.yaml", params)
    jobs = planned_jobs(snakemake(root, generate_python, "-n"))
    assert jobs == {"all": 1, "evaluate": 1, "tables": 1, "train": 1, "interpret_mathematics": 1,
                    "interpret_reconstruction": 1, "report": 1}
    plan = snakemake(root, generate_python, "-n", "-p")
    assert "--model tp_transformer" in plan and "--model transformer " not in plan

    # A finished run whose model folder is lost (Snakemake removes a failed job's outputs): the rerun
    # finds the finished checkpoint, trains nothing and re-creates every declared output (issue 25).
    folder = root / "mathematics/models/transformer-s1"
    curve = (folder / "learning_curve.csv").read_bytes()
    shutil.rmtree(folder)
    out = snakemake(root, generate_python, "mathematics/models/transformer-s1/learning_curve.csv")
    assert "1 of 1 steps (100%) done" in out
    assert "nothing to train" in (root / "logs/train/transformer-s1.log").read_text()
    assert (folder / "learning_curve.csv").read_bytes() == curve
    assert {p.name for p in folder.iterdir()} >= {"model.pt", "train_metrics.json", "learning_curve.csv"}

    # `make clean` removes everything the run made: git then sees nothing ignored (the venvs live elsewhere here).
    subprocess.run(["make", "clean"], cwd=root, check=True, capture_output=True)
    ignored = subprocess.run(["git", "status", "--ignored", "--porcelain"], cwd=root, capture_output=True,
                             text=True, check=True).stdout
    assert [line for line in ignored.splitlines() if line.startswith("!!")] == []


def test_dvc_pipeline_end_to_end(project, generate_python):
    root, params = project
    run(["git", "init", "-q"], root, generate_python)
    repro = dvc(root, generate_python, "repro")
    warned = [line for line in repro.splitlines() if line.startswith("WARNING") and "tprepro runs from" not in line]
    assert warned == []  # DVC's (an empty dep file, say); tprepro's own is for the copied checkout
    check_results(root, params)
    report = root / "results/report.html"  # the report stage, after every table it shows
    assert report.stat().st_mtime_ns >= (root / "results/metrics.json").stat().st_mtime_ns
    assert "Table 1." in report.read_text() and "data:image/png;base64," in report.read_text()
    assert "up to date" in dvc(root, generate_python, "status").lower()
    assert (root / "logs/progress/tprepro-mathematics/transformer-s1.log").is_file()  # for `tprepro status`

    # a setting reruns only the stages that read it: one key of each experiment (issue 45)
    for experiment, override in EACH_EXPERIMENTS_DVC_KEY.items():
        key, value = override.split("=")
        changed = copy.deepcopy(params)
        section, *middle, leaf = key.split(".")
        node = changed[section]
        for part in middle:
            node = node[part]
        node[leaf] = int(value)
        write_params(root / "params.yaml", changed)
        status = json.loads(dvc(root, generate_python, "status", "--json").strip().splitlines()[-1])
        assert status and {name.split("@")[0] for name in status} <= rules_of(experiment), (override, status)
    write_params(root / "params.yaml", params)

    params["models"]["tp_transformer"]["d_ff"] = 24
    write_params(root / "params.yaml", params)
    status = json.loads(dvc(root, generate_python, "status", "--json").strip().splitlines()[-1])
    assert set(status) == {"train@tp_transformer-1", "tables"}  # tables reads the architecture (its paper row)
    rerun = re.findall(r"Running stage '([^']+)'", dvc(root, generate_python, "repro"))
    assert set(rerun) == {"train@tp_transformer-1", "evaluate@tp_transformer-1", "tables",
                          "interpret_mathematics@tp_transformer-1", "interpret_reconstruction", "report"}
    assert report.stat().st_mtime_ns >= (root / "results/metrics.json").stat().st_mtime_ns  # refreshed with them

    # Comparing runs as a DVC user does (README "Comparing runs"): each experiment keeps its own numbers,
    # curves and models, and `dvc exp apply` brings all of them back.
    for setting in (["user.name", "tprepro tests"], ["user.email", "tests@tprepro.invalid"]):
        run(["git", "config", *setting], root, generate_python)
    run(["git", "add", "-A"], root, generate_python)
    run(["git", "commit", "-q", "-m", "the micro pipeline"], root, generate_python)
    dvc(root, generate_python, "exp", "save", "-n", "baseline")
    baseline = json.loads((root / "results/metrics.json").read_text())
    dvc(root, generate_python, "exp", "run", "-n", "longer", "-S", "train.steps=24")
    longer = json.loads((root / "results/metrics.json").read_text())
    assert longer["mathematics"]["train_loss"] != baseline["mathematics"]["train_loss"]

    shown = json.loads(dvc(root, generate_python, "exp", "show", "--json").strip().splitlines()[-1])
    rows = {rev.get("name") or rev["rev"]: rev for commit in shown
            for rev in [commit, *[r for e in commit.get("experiments") or [] for r in e["revs"]]]}
    for name, metrics in (("baseline", baseline), ("longer", longer)):  # both rows have their own numbers
        assert rows[name]["data"]["metrics"]["results/metrics.json"]["data"] == metrics, name
    view = run([sys.executable, "-m", "tprepro", *readme_compare()[1:]], root, generate_python).splitlines()
    view = [line for line in view if not line.startswith("WARNING")]  # tprepro's own, for the copied checkout
    assert {"baseline", "longer"} <= set(view[0].split()), view[0]  # a column per experiment
    rows = {line.split()[0]: line.split()[1:] for line in view[1:]}
    assert {"mathematics.train_loss.transformer", "mathematics.interpolation_acc.transformer",
            "two_variable.overall_acc.ut", "train.steps"} <= rows.keys(), view  # headlines, the setting that differs
    assert "train.batch_size" not in rows and not [row for row in rows if "/" in row], view  # only what differs
    assert max(map(len, view)) <= 160, "\n".join(view)  # README's line in a 160-column terminal

    diff = json.loads(dvc(root, generate_python, "metrics", "diff", "baseline", "--json").strip().splitlines()[-1])
    loss = diff["results/metrics.json"]["mathematics.train_loss.transformer"]
    assert (loss["old"], loss["new"]) == (baseline["mathematics"]["train_loss"]["transformer"],
                                          longer["mathematics"]["train_loss"]["transformer"])
    curve = "mathematics/models/transformer-s1/learning_curve.csv"
    plots = json.loads(dvc(root, generate_python, "plots", "diff", "baseline", "--json", "--targets", curve
                           ).strip().splitlines()[-1])["data"][curve]
    points = [(point["rev"], int(point["step"])) for plot in plots for point in plot["content"]["data"]["values"]]
    assert {rev for rev, _ in points} == {"baseline", "workspace"}  # two curves: 12 steps and 24
    assert max(step for rev, step in points if rev == "baseline") == 12 < max(step for _, step in points) == 24
    dvc(root, generate_python, "plots", "diff", "baseline")  # the page, as README's line writes it
    assert (root / "dvc_plots/index.html").is_file()
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], root, generate_python)
    assert "dvc_plots" not in status, status  # README's `git add -A` would not commit it

    dvc(root, generate_python, "exp", "apply", "baseline")
    shown = json.loads(dvc(root, generate_python, "metrics", "show", "--json").strip().splitlines()[-1])
    assert shown[""]["data"]["results/metrics.json"]["data"] == baseline
    assert yaml.safe_load((root / "params.yaml").read_text())["train"]["steps"] == params["train"]["steps"]
    assert json.loads((root / "mathematics/models/transformer-s1/train_metrics.json").read_text())["steps"] == 12
