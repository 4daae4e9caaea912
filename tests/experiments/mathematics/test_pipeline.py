"""End to end on a temporary copy of the project: the real generator, Snakemake, DVC and MLflow.

A micro configuration (2 modules, 1 extrapolation module, a few steps) keeps each run short.
"""

import contextlib
import copy
import json
import shutil
import sqlite3
import subprocess

import mlflow
import pytest

from finished_project import outputs_as_made
from helpers import copy_project, experiment_name, write_params
from pipeline_kit import NOTHING, check_results, dvc, dvc_plans, micro_params, planned_jobs, run, snakemake
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


def test_snakemake_pipeline_end_to_end(finished, tmp_path, generate_python):
    """Snakemake's run of the micro project, recorded for DVC as `make run` records it (tests/finished_project.py:
    the record rewrote no output; each stage ran the code and read the params keys it declares)."""
    project = finished.copy(tmp_path / "repo")
    root, params = project.root, project.params
    check_results(root, params)
    check_mlflow(root, params)
    assert "up to date" in dvc(root, generate_python, "status").lower()
    assert NOTHING in snakemake(root, generate_python, "-n")
    # run again for real: no job, no file rewritten, no MLflow run left behind (an idle parent run is deleted)
    made, active = outputs_as_made(root), active_runs(root)
    assert NOTHING in snakemake(root, generate_python)
    assert outputs_as_made(root) == made
    assert active_runs(root) == active
    shown = dvc(root, generate_python, "metrics", "show")  # each column names experiment, metric and model
    assert "results/metrics.json" in shown and "mathematics.interpolation_acc.tp_transformer" in shown, shown
    one = dvc(root, generate_python, "metrics", "show", "results/metrics.json")  # one experiment: one short line
    assert len(one.splitlines()) == 2 and max(map(len, one.splitlines())) <= 200, one

    # a setting reruns only the stages that read it: one key of each experiment as `--config` takes it (issue 45;
    # each key's exact jobs, set in params.yaml: tests/workflow/test_reruns_declared.py)
    for experiment, override in EACH_EXPERIMENTS_KEY.items():
        planned = planned_jobs(snakemake(root, generate_python, "-n", "--config", override))
        assert planned.keys() - {"all"} and planned.keys() - {"all"} <= rules_of(experiment), (override, planned)

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
    """`dvc repro` from nothing. What a setting changed, and `dvc exp` save, run, compare and apply, do to a finished
    project: tests/workflow/test_reruns_declared.py, test_reruns_content.py."""
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
        status = dvc_plans(root, generate_python)
        assert status and {name.split("@")[0] for name in status} <= rules_of(experiment), (override, status)
