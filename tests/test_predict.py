"""`tprepro predict` answers questions with a trained model: arguments, a file or stdin, text or JSON."""

import json
import subprocess
import sys

import pytest
import torch

from helpers import tool_env
from tprepro.evaluate.evaluate import load_trained, predict
from tprepro.evaluate.pyfunc import save_answering_model
from training_project import trained_run

QUESTIONS = ["What is 2 + 3?", "What is -7 - 12?", "What is 40 + 2?"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return trained_run(tmp_path_factory.mktemp("predict"), steps=30, log_every=10) / "model"


def tprepro(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "tprepro", *args], input=stdin, env=tool_env(),
                          capture_output=True, text=True)


def test_predict_answers_as_the_evaluation_decodes(model_dir, tmp_path):
    model, vocab, _ = load_trained(model_dir / "model.pt", torch.device("cpu"))
    expected = predict(model, vocab, QUESTIONS, batch_size=2, max_len=64)
    result = tprepro("predict", "--model-dir", str(model_dir), "--json", "--batch-size", "2", *QUESTIONS)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["question"] for r in records] == QUESTIONS and [r["answer"] for r in records] == expected

    questions = tmp_path / "questions.txt"
    questions.write_text("\n".join(QUESTIONS) + "\n\n")
    from_file = tprepro("predict", "--model-dir", str(model_dir), "--file", str(questions))
    from_stdin = tprepro("predict", "--model-dir", str(model_dir), "--file", "-", stdin=questions.read_text())
    lines = [f"{q} | {a}" for q, a in zip(QUESTIONS, expected)]
    assert from_file.stdout.splitlines() == lines and from_stdin.stdout.splitlines() == lines


def test_predict_errors_name_what_is_missing(tmp_path, model_dir):
    result = tprepro("predict", "--model-dir", str(tmp_path), "What is 1 + 1?")
    assert result.returncode == 2 and f"{tmp_path / 'model.pt'}: no trained model here" in result.stderr
    result = tprepro("predict", "--model-dir", str(tmp_path / "modelz"), "What is 1 + 1?")  # a typo
    assert result.returncode == 2 and f"{tmp_path / 'modelz'}: no such model folder (does not exist" in result.stderr
    result = tprepro("predict", "--model-dir", str(model_dir.parent), "What is 1 + 1?")  # the folder above
    assert result.returncode == 2 and (f"{model_dir.parent} holds model folders, not a model: give one of them as "
                                       f"--model-dir: {model_dir}") in result.stderr
    result = tprepro("predict", "--model-dir", str(model_dir), "--file", str(tmp_path / "absent.txt"))
    assert result.returncode == 2 and "absent.txt: cannot read questions" in result.stderr


def test_predict_refuses_empty_and_undecodable_questions_in_one_line(tmp_path, model_dir):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("What is 2 + 3?\nCombien font 2 \u00d7 3 ?\n".encode("latin-1"))
    result = tprepro("predict", "--model-dir", str(model_dir), "--file", str(latin1))
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"tprepro predict: error: {latin1}: line 2 is not UTF-8 text (invalid continuation byte at byte 15)"]
    result = tprepro("predict", "--model-dir", str(model_dir), "--file", "-", stdin="\n  \n")
    assert result.returncode == 2 and "stdin: no question in it (one per line)" in result.stderr
    result = tprepro("predict", "--model-dir", str(model_dir), "What is 1 + 1?", "  ")
    assert result.returncode == 2 and "question 2 is empty" in result.stderr
    assert "Traceback" not in result.stderr


def test_version():
    from tprepro import __version__

    result = tprepro("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"tprepro {__version__}"


def test_the_mlflow_model_answers_as_predict_does(model_dir, tmp_path):
    """The pyfunc model a training run logs (evaluate/pyfunc.py), loaded by MLflow alone in a fresh
    interpreter with pickle loading refused, answers a list of questions as `tprepro predict` does: it is
    saved as code (models-from-code), and no pickled object is in it (issue 37)."""
    model, vocab, _ = load_trained(model_dir / "model.pt", torch.device("cpu"))
    save_answering_model(model_dir, vocab, QUESTIONS[0], tmp_path / "mlflow_model")
    script = ("import json, sys, mlflow.pyfunc\n"
              "model = mlflow.pyfunc.load_model(sys.argv[1])\n"
              "print(json.dumps(model.predict(sys.argv[2:])))\n")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "mlflow_model"), *QUESTIONS],
                            env=tool_env(MLFLOW_ALLOW_PICKLE_DESERIALIZATION="false"), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    saved = sorted(path.relative_to(tmp_path / "mlflow_model").as_posix()
                   for path in (tmp_path / "mlflow_model").rglob("*") if path.is_file())
    assert not [name for name in saved if name.endswith((".pkl", ".pickle"))], saved
    assert "answering_model.py" in saved and "model_code_path:" in (tmp_path / "mlflow_model/MLmodel").read_text()
    expected = [{"question": q, "answer": a} for q, a in zip(QUESTIONS, predict(model, vocab, QUESTIONS, 64, 64))]
    assert json.loads(result.stdout.splitlines()[-1]) == expected
    assert json.loads((tmp_path / "mlflow_model/input_example.json").read_text())  # an input example is stored
    assert "signature:" in (tmp_path / "mlflow_model/MLmodel").read_text()
    assert (tmp_path / "mlflow_model/artifacts/tprepro_model/model.pt").read_bytes() == (model_dir / "model.pt").read_bytes()


def test_a_training_run_logs_its_model_under_logged_models(model_dir, tmp_path, monkeypatch):
    """tracking.run.Run.log_model: MLflow's logged model `model` of the run, loaded by `runs:/<id>/model`;
    a re-export replaces it rather than adding a second one."""
    import mlflow
    from mlflow.entities import LoggedModelStatus
    from mlflow.tracking import MlflowClient

    from tprepro.tracking.run import Run
    from tprepro.tracking.store import Experiment, local_uri

    monkeypatch.chdir(tmp_path)  # the local store and its artifacts
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    model, vocab, _ = load_trained(model_dir / "model.pt", torch.device("cpu"))
    save_answering_model(model_dir, vocab, QUESTIONS[0], tmp_path / "staged")
    run = Run(Experiment("tprepro-test"), "tp_transformer-s1")
    run.log_model(tmp_path / "staged", "model", "pyfunc")
    run.log_model(tmp_path / "staged", "model", "pyfunc")
    run.finish()
    assert not run.disabled
    client = MlflowClient(local_uri())
    logged = [m for m in client.search_logged_models([run.experiment_id]) if m.source_run_id == run.run_id]
    assert [(m.name, m.model_type, m.status) for m in logged] == [("model", "pyfunc", LoggedModelStatus.READY)]
    outputs = client.get_run(run.run_id).outputs.model_outputs  # what the run page lists
    assert logged[0].model_id in [output.model_id for output in outputs]
    # `runs:/` resolves in the local store: MLflow's global URI and the variable mlflow.set_tracking_uri would
    # set for subprocesses, both put back after the test (a leaked variable sent later tests' `make ui` here)
    from mlflow.tracking._tracking_service import utils as tracking_uri

    monkeypatch.setattr(tracking_uri, "_tracking_uri", local_uri())
    monkeypatch.setenv("MLFLOW_TRACKING_URI", local_uri())
    answers = mlflow.pyfunc.load_model(f"runs:/{run.run_id}/model").predict(QUESTIONS)
    assert answers == [{"question": q, "answer": a} for q, a in zip(QUESTIONS, predict(model, vocab, QUESTIONS, 64, 64))]
