"""Trained models as MLflow models: `mlflow.pyfunc.load_model("runs:/<run id>/<name>").predict([...])`
answers as `tprepro predict --model-dir` does (evaluate/answering.py), on a list of questions.

The pyfunc model carries the model directory (model.pt, train_metrics.json) as its artifact and the
codec kind of the model (data/codecs.py) in its model config, so loading it needs the installed
tprepro only, and no experiment has to be listed first. It is saved as code (MLflow's models-from-code,
evaluate/answering_model.py), not as a pickled object: loading it unpickles nothing (model.pt is read
with weights_only).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import mlflow
import torch

from tprepro import __version__
from tprepro.data.codecs import CodecKind, kind_of, register
from tprepro.evaluate.answering import answer_with
from tprepro.evaluate.evaluate import load_trained
from tprepro.train.files import MODEL_FILE
from tprepro.train.folder_lock import LOCK_FILE

ARTIFACT = "model"  # a logged model's default name (the pipeline's: pipeline.logged_model_name)
FILES = "tprepro_model"  # its artifact holding the model directory: artifacts/tprepro_model/model.pt
MODEL_CODE = Path(__file__).with_name("answering_model.py")  # the model as code: set_model(AnsweringModel())


class AnsweringModel(mlflow.pyfunc.PythonModel):
    """A trained tprepro model: questions (or documents) in, one answer record per question out."""

    def load_context(self, context) -> None:
        register(CodecKind(**context.model_config["codec_kind"]))
        self.model_dir = Path(context.artifacts[FILES])
        self.model, self.codec, _ = load_trained(self.model_dir / MODEL_FILE, torch.device("cpu"))  # once, not per call

    def predict(self, context, model_input: list[str], params=None) -> list[dict[str, str]]:
        # The type hints are the signature: MLflow checks and converts the input to a list of strings.
        # Fields as text (a MathQA program's value included), as `tprepro predict` prints them.
        records = answer_with(self.model, self.codec, self.model_dir, model_input)
        return [{key: str(value) for key, value in record.items()} for record in records]


def save_answering_model(model_dir: Path, codec, example: str, path: Path) -> None:
    """The MLflow model of the exported model in `model_dir` (whose codec is `codec`) at `path`, with
    `example` as its input example (the signature comes from `AnsweringModel.predict`'s type hints)."""
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / FILES  # MLflow names an artifact's folder after its source: the same name for every run
        shutil.copytree(model_dir, files, ignore=shutil.ignore_patterns(LOCK_FILE))  # the trainer's lock is no output
        mlflow.pyfunc.save_model(
            path, python_model=str(MODEL_CODE), artifacts={FILES: str(files)},
            model_config={"codec_kind": asdict(kind_of(codec))},
            input_example=[example],
            pip_requirements=[f"tprepro=={__version__}", f"torch=={torch.__version__.split('+')[0]}"],
        )


def log_answering_model(run, model_dir: Path, codec, example: str, staging: Path, name: str = ARTIFACT) -> None:
    """The MLflow model of `model_dir` as `run`'s logged model `name` (a tracking.run.Run), written
    first to `staging` (replaced; kept, so that a fallback to the local store can log it again)."""
    if staging.exists():
        shutil.rmtree(staging)
    save_answering_model(model_dir, codec, example, staging)
    run.log_model(staging, name, "pyfunc")
