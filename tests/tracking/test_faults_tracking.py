"""Tracking never blocks or breaks the pipeline, done for real: a dead server port (bound, then
closed), a truncated mlflow.db, a copied project, a failed and a resumed training run."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import subprocess
import sys

import pytest
import yaml

from tprepro.train.checkpoint import load_checkpoint
from tprepro.train.trainer import Trainer

from helpers import REPO, arithmetic_rows, run_tprepro, tool_env, write_dataset, write_params
from training_kit import CrashAt, data, make_job  # noqa: F401  (the module-scoped dataset fixture)
from training_project import make_workspace, start_training, train

LOCAL = "sqlite:///mlflow.db"
BIG = "arithmetic__add_or_sub_big"


def dead_port_uri() -> str:
    """An http URI on a port that was just free: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


tprepro = run_tprepro


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A trained and evaluated tiny run in `<root>/run` (its own local store): model, eval CSV."""
    root = make_workspace(tmp_path_factory.mktemp("tracking"), steps=6, checkpoint_every=3, log_every=2)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["grid"]["extrapolation_modules"] = [BIG]
    write_dataset(root / "data" / "extrapolate" / BIG, arithmetic_rows(40, seed=4, module=BIG, split="extrapolate"))
    params["evaluate"].update(train_sample=16)
    params["data"].update(test_per_module=600)  # its interpolate set is the 600 training problems (evaluate below)
    write_params(root / "params.yaml", params)
    run = root / "run"
    train(root, run)
    (run / "models").mkdir()
    (run / "model").rename(run / "models" / "transformer-s1")
    result = evaluate(root, run)
    assert result.returncode == 0, result.stderr[-3000:]
    return root


def evaluate(root, run, **env) -> subprocess.CompletedProcess:
    data = root / "data" / "train-easy"
    return tprepro("evaluate", "--params", root / "params.yaml", "--model-dir", "models/transformer-s1",
                   "--interpolate", data, "--extrapolate", root / "data" / "extrapolate", "--train", data, "--out", "eval/transformer-s1.csv",
                   cwd=run, **env)


def metric_rows(db, key_like: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM metrics WHERE key LIKE ?", (key_like,)).fetchone()[0]


@pytest.mark.slow  # pipeline subprocesses
def test_the_recorded_tracking_uri_is_project_relative(project):
    run = project / "run"
    metrics = json.loads((run / "models" / "transformer-s1" / "train_metrics.json").read_text())
    assert metrics["mlflow_tracking_uri"] == LOCAL
    assert load_checkpoint(run / "checkpoints" / "checkpoint.pt")["extra"]["mlflow_tracking_uri"] == LOCAL


@pytest.mark.slow  # pipeline subprocesses
def test_a_copied_project_writes_into_its_own_store(project, tmp_path):
    original = project / "run"
    before = metric_rows(original / "mlflow.db", "acc.%")
    copy = shutil.copytree(original, tmp_path / "copy")
    (copy / "eval" / "transformer-s1.csv").unlink()
    result = evaluate(project, copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert metric_rows(original / "mlflow.db", "acc.%") == before  # the original store is untouched
    assert metric_rows(copy / "mlflow.db", "acc.%") == 2 * before  # the copy's own store got them


@pytest.mark.slow  # pipeline subprocesses
def test_a_truncated_store_is_named_and_the_stage_still_writes_its_outputs(project, tmp_path):
    copy = shutil.copytree(project / "run", tmp_path / "broken")
    (copy / "eval" / "transformer-s1.csv").unlink()
    db = copy / "mlflow.db"
    body = db.read_bytes()
    db.write_bytes(body[: int.from_bytes(body[16:18], "big")])  # only the first page (the schema) is left
    result = evaluate(project, copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (copy / "eval" / "transformer-s1.csv").is_file()
    assert f"MLflow store {db} failed" in result.stderr
    assert f"MLflow store {db} is damaged (sqlite quick_check" in result.stderr  # said first, at the start
    assert result.stderr.count("WARNING: MLflow") == 2


@pytest.mark.slow  # pipeline subprocesses
def test_damage_in_the_middle_of_the_store_is_reported_at_the_start(project, tmp_path):
    """Pages overwritten in the middle of mlflow.db (the file keeps its size, its first page is intact):
    the stage warns once, naming the file and what sqlite's quick_check found, and still writes its outputs."""
    copy = shutil.copytree(project / "run", tmp_path / "damaged")
    (copy / "eval" / "transformer-s1.csv").unlink()
    db = copy / "mlflow.db"
    body = bytearray(db.read_bytes())
    page = int.from_bytes(body[16:18], "big")
    middle = (len(body) // page // 2) * page
    body[middle : middle + 2 * page] = bytes(range(256)) * (2 * page // 256)
    db.write_bytes(bytes(body))
    result = evaluate(project, copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (copy / "eval" / "transformer-s1.csv").is_file()
    assert f"MLflow store {db} is damaged (sqlite quick_check:" in result.stderr
    assert result.stderr.count("is damaged") == 1


@pytest.mark.slow  # pipeline subprocesses
def test_tables_with_the_server_down_write_the_tables_and_exit_0(project, tmp_path):
    copy = shutil.copytree(project / "run", tmp_path / "tables")
    result = tprepro("tables", "--params", project / "params.yaml", "--eval-dir", "eval", "--models-dir", "models",
                     "--table", "results/tables/table1",
                     "--modules-csv", "results/tables/mathematics_modules.csv",
                     "--figure", "results/figures/mathematics_modules.png",
                     "--curves", "results/figures/learning_curves.png",
                     "--metrics", "results/metrics.json", cwd=copy, MLFLOW_TRACKING_URI=dead_port_uri())
    assert result.returncode == 0, result.stderr[-3000:]
    assert (copy / "results" / "tables" / "table1.md").is_file()
    assert (copy / "results" / "metrics.json").is_file()
    assert result.stderr.count("WARNING: MLflow tracking server") == 1
    with sqlite3.connect(copy / "mlflow.db") as conn:
        statuses = dict(conn.execute("SELECT name, status FROM runs WHERE name IN ('tables', 'pipeline')").fetchall())
    assert statuses == {"tables": "FINISHED", "pipeline": "FINISHED"}  # the fallback parent is closed too


SNAKEFILE = """
P = {{"mlflow": {{"prefix": "faults", "log_models": True}}}}
include: "{rules}/mlflow.smk"

rule all:
    output: "env.txt"
    shell: "echo $TPREPRO_INVOCATION $MLFLOW_TRACKING_URI > {{output}}"
"""


@pytest.mark.slow  # pipeline subprocesses
def test_snakemake_starts_with_the_server_down_and_tracks_locally(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(rules=REPO / "workflow" / "rules"))
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=tmp_path,
                            env=tool_env(MLFLOW_TRACKING_URI=dead_port_uri()), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("WARNING: MLflow tracking server") == 1
    invocation, uri = (tmp_path / "env.txt").read_text().split()
    assert uri == f"sqlite:///{tmp_path / 'mlflow.db'}"
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:  # one parent per experiment, in the local store
        parents = conn.execute("SELECT e.name, r.lifecycle_stage FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid"
                               " JOIN experiments e ON e.experiment_id = r.experiment_id"
                               " WHERE t.key = 'tprepro.invocation' AND t.value = ?", (invocation,)).fetchall()
    # no job tracked anything, so the parents are removed at the end rather than left empty
    assert sorted(parents) == [(f"faults-{name}", "deleted") for name in ("mathematics", "n2f", "summarization",
                                                                           "two-variable")]


@pytest.mark.slow  # pipeline subprocesses
def test_a_failed_training_run_ends_failed(tmp_path):
    root = make_workspace(tmp_path / "ws", steps=6, checkpoint_every=3, log_every=2, lr=1.0e30, grad_clip=1.0e30)
    process = start_training(root, tmp_path / "run")
    out, _ = process.communicate(timeout=600)
    assert process.returncode == 2, out[-3000:]
    with sqlite3.connect(tmp_path / "run" / "mlflow.db") as conn:
        assert conn.execute("SELECT status FROM runs WHERE name = 'transformer-s1'").fetchone() == ("FAILED",)


def test_a_resumed_run_logs_each_step_once(data, tmp_path, monkeypatch):  # noqa: F811
    from tprepro.tracking.callback import MLflowCallback

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    ckpt = tmp_path / "ckpt.pt"

    def job():
        return make_job(data, 14, checkpoint_every=4, log_every=2)

    crashed = Trainer(job(), ckpt, callbacks=[MLflowCallback("faults", {}, {}), CrashAt(10)])
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()  # loss logged up to step 10, checkpoint at step 8
    resumed = Trainer(job(), ckpt, callbacks=[MLflowCallback("faults", {}, {})])
    assert resumed.resumed_from == 8
    resumed.fit()
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        steps = [s for (s,) in conn.execute("SELECT step FROM metrics WHERE key = 'loss' ORDER BY step")]
    assert steps == [2, 4, 6, 8, 10, 12, 14]


@pytest.mark.slow  # pipeline subprocesses
def test_a_failed_evaluation_ends_its_run_failed(project, tmp_path):
    copy = shutil.copytree(project / "run", tmp_path / "evalfail")
    (copy / "eval" / "transformer-s1.csv").unlink()
    (copy / "eval" / "transformer-s1.csv").mkdir()  # the CSV cannot be written: a real OSError
    result = evaluate(project, copy)
    assert result.returncode != 0
    with sqlite3.connect(copy / "mlflow.db") as conn:
        assert conn.execute("SELECT status FROM runs WHERE name = 'transformer-s1'").fetchone() == ("FAILED",)


def test_two_jobs_logging_one_dataset_at_the_same_moment_both_stay_tracked(tmp_path, monkeypatch):
    """Two trainings of one pipeline read the same shards: MLflow's store looks an experiment's datasets up, then
    inserts those it did not find, so the later insert hits the datasets' unique key (seen in a Snakemake run of
    the variants, which then lost the run's checkpoint metrics). Done for real on one sqlite store: between this
    run's lookup and its insert, another job's run logs the same dataset."""
    from sqlalchemy.orm import Query

    from tprepro.tracking.run import DatasetRecord, Run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    datasets = {"train-easy/arithmetic__add_or_sub": DatasetRecord("data/x", "ab" * 32, 10, 1)}
    first, other = Run("race", "first", tracking_uri=uri), Run("race", "other", tracking_uri=uri)
    lookup, raced = Query.all, []

    def the_other_job_inserts_after_this_lookup(query):
        found = lookup(query)
        if query.column_descriptions[0]["name"] == "SqlDataset" and not raced:
            raced.append(True)
            other.log_datasets(datasets)
        return found

    monkeypatch.setattr(Query, "all", the_other_job_inserts_after_this_lookup)
    first.log_datasets(datasets)
    monkeypatch.undo()
    assert raced and not first.disabled and not other.disabled
    first.log_metrics({"loss": 1.0}, step=3)  # and the run goes on being tracked
    for run in (first, other):
        logged = run.client.get_run(run.run_id)
        assert [d.dataset.name for d in logged.inputs.dataset_inputs] == ["train-easy/arithmetic__add_or_sub"]
    assert [m.step for m in first.client.get_metric_history(first.run_id, "loss")] == [3]
