"""The MLflow model a training run logs runs its stored code (models-from-code) only if that code is the
code it was logged with: an edited `answering_model.py` in the artifact store is refused, naming it,
before it runs; an empty question is refused, not answered. A real `tprepro train` logging into a real
local MLflow store, loaded by `mlflow.pyfunc.load_model` in fresh interpreters (issue 46, gap 5)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import tool_env
from training_project import trained_run

pytestmark = pytest.mark.slow  # a `tprepro train` subprocess, MLflow loads in fresh interpreters

LOAD = ("import json, sys, mlflow.pyfunc\n"
        "model = mlflow.pyfunc.load_model(sys.argv[1])\n"
        "print(json.dumps(model.predict(sys.argv[2:])))\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory.mktemp("logged"), steps=20, log_every=10)


def logged_model(run: Path) -> tuple[str, Path]:
    """The run's logged model: its URI and its folder in the artifact store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{run / 'mlflow.db'}")
    ids = [experiment.experiment_id for experiment in client.search_experiments()]
    models = client.search_logged_models(ids)
    assert len(models) == 1, models
    stored = Path(models[0].artifact_location.removeprefix("file://"))
    if not stored.is_absolute():
        stored = run / stored
    assert (stored / "MLmodel").is_file(), stored
    return f"models:/{models[0].model_id}", stored


def load_and_ask(run: Path, uri: str, *questions: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LOAD, uri, *questions], cwd=run,
                          env=tool_env(MLFLOW_TRACKING_URI=f"sqlite:///{run / 'mlflow.db'}"),
                          capture_output=True, text=True, timeout=600)


def test_an_empty_question_is_refused_not_answered(run):
    uri, _ = logged_model(run)
    answered = load_and_ask(run, uri, "What is 2 + 3?")
    assert answered.returncode == 0, answered.stderr[-4000:]
    assert [record["question"] for record in json.loads(answered.stdout.splitlines()[-1])] == ["What is 2 + 3?"]
    for empty in ("", "   "):
        refused = load_and_ask(run, uri, "What is 2 + 3?", empty)
        assert refused.returncode != 0, refused.stdout
        assert "question 2 is empty: ask something" in refused.stderr


def test_an_edited_stored_model_code_is_refused_naming_it_before_it_runs(run, tmp_path):
    uri, stored = logged_model(run)
    code = stored / "answering_model.py"
    original = code.read_bytes()
    marker = tmp_path / "stored code ran"
    try:
        code.write_bytes(original + f"\nopen({str(marker)!r}, 'w').write('ran')\n".encode())
        loaded = load_and_ask(run, uri, "What is 2 + 3?")
        assert loaded.returncode != 0, loaded.stdout
        assert "answering_model.py: the model's code is not the code it was logged with" in loaded.stderr
        assert "refusing to run it" in loaded.stderr
        assert not marker.exists()  # refused before it ran
    finally:
        code.write_bytes(original)
    again = load_and_ask(run, uri, "What is 2 + 3?")  # the logged code itself loads
    assert again.returncode == 0, again.stderr[-4000:]
