"""tracking/callback.py: what a training run's MLflow record says stays true when it is resumed."""

import pytest

import yaml

from helpers import write_params
from training_project import make_workspace, train
from tprepro.tracking.callback import RESUMED_FROM_TAG, SETTINGS_TAG

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def runs_by_name(store):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{store}")
    experiment = client.get_experiment_by_name("tprepro-mathematics")
    runs = client.search_runs([experiment.experiment_id], filter_string="tags.stage = 'train'")
    models = {m.source_run_id: m.name for m in client.search_logged_models([experiment.experiment_id])}
    return client, {run.info.run_name: run for run in runs}, models


def test_more_steps_continue_in_a_new_run_and_the_old_run_keeps_describing_its_model(tmp_path):
    workspace, run = make_workspace(tmp_path / "w", steps=4, checkpoint_every=4, log_every=2), tmp_path / "run"
    train(workspace, run)
    client, before, _ = runs_by_name(run / "mlflow.db")
    old = before["transformer-s1"]
    old_history = [(m.step, m.value) for m in client.get_metric_history(old.info.run_id, "loss")]

    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["train"]["steps"] = 8  # resumes the 4-step checkpoint
    write_params(workspace / "params.yaml", params)
    out = train(workspace, run)
    assert "a new run continues it" in out

    client, after, models = runs_by_name(run / "mlflow.db")
    (new_name,) = set(after) - {"transformer-s1"}
    new = after[new_name]
    assert new_name == f"transformer-s1-{new.data.tags[SETTINGS_TAG][:7]}"
    assert new.data.tags[RESUMED_FROM_TAG] == old.info.run_id
    assert new.data.params["train.steps"] == "8" and [m.step for m in client.get_metric_history(
        new.info.run_id, "loss")] == [6, 8]  # its own steps, after the checkpoint it continued
    # the old run as it was: its settings, its losses, its status and its logged model
    kept = client.get_run(old.info.run_id)
    assert kept.data.params == old.data.params and kept.data.params["train.steps"] == "4"
    assert [(m.step, m.value) for m in client.get_metric_history(old.info.run_id, "loss")] == old_history
    assert kept.info.status == "FINISHED" and kept.data.tags[SETTINGS_TAG] != new.data.tags[SETTINGS_TAG]
    assert models[old.info.run_id] == "tprepro-mathematics-transformer-s1"
    assert models[new.info.run_id] == f"tprepro-mathematics-{new_name}"
    assert (run / "model" / "train_metrics.json").read_text().count(new.info.run_id) == 1
