"""Trained models as MLflow models: `mlflow.pyfunc.load_model("runs:/<run id>/<name>").predict([...])`
answers as `tprepro predict --model-dir` does (evaluate/answering.py), on a list of questions.

The pyfunc model carries the model directory (model.pt, train_metrics.json) as its artifact and the
codec kind of the model (data/codecs.py) in its model config, so loading it needs the installed
tprepro only, and no experiment has to be listed first. It is saved as code (MLflow's models-from-code,
evaluate/answering_model.py), not as a pickled object: loading it unpickles nothing (model.pt is read
with weights_only).

What loading trusts. MLflow runs the stored copy of answering_model.py to build the model, so its MLmodel
file names this module as the loader (`_load_pyfunc`): the stored code runs only if its sha256 is the one
recorded in the MLmodel file when the model was logged (`tprepro_code_sha256`); an edited or swapped code
file is refused, naming it, before it runs. The MLmodel file itself is trusted: whoever can rewrite the
artifact store's MLmodel can name another loader, or the code's digest, and `mlflow.pyfunc.load_model`
then runs what they wrote (MLflow's design: loading an MLflow model runs code its files name). Load
models only from an artifact store no one else may write (docs/tracking.md).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import mlflow
import torch

from tprepro import __version__
from tprepro.errors import TpreproError
from tprepro.data.codecs import CodecKind, kind_of, register
from tprepro.evaluate.answering import answer_with
from tprepro.evaluate.evaluate import load_trained
from tprepro.train.files import MODEL_FILE
from tprepro.train.folder_lock import LOCK_FILE

ARTIFACT = "model"  # a logged model's default name (the pipeline's: training.logged_model_name)
FILES = "tprepro_model"  # its artifact holding the model directory: artifacts/tprepro_model/model.pt
MODEL_CODE = Path(__file__).with_name("answering_model.py")  # the model as code: set_model(AnsweringModel())
CODE_DIGEST = "tprepro_code_sha256"  # the python_function flavor's record of the stored code's sha256


class ModelCodeChanged(TpreproError):
    """A logged model's stored code is not the code it was logged with."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class AnsweringModel(mlflow.pyfunc.PythonModel):
    """A trained tprepro model: questions (or documents) in, one answer record per question out."""

    def load_context(self, context) -> None:
        register(CodecKind(**context.model_config["codec_kind"]))
        self.model_dir = Path(context.artifacts[FILES])
        self.model, self.codec, _ = load_trained(self.model_dir / MODEL_FILE, torch.device("cpu"))  # once, not per call

    def predict(self, context, model_input: list[str], params=None) -> list[dict[str, str]]:
        # The type hints are the signature: MLflow checks and converts the input to a list of strings.
        # Fields as text (a MathQA program's value included), as `tprepro predict` prints them.
        for number, question in enumerate(model_input, 1):  # refused as `tprepro predict` refuses them
            if not question.strip():
                raise TpreproError(f"question {number} is empty: ask something")
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
    record_code_digest(Path(path))


def record_code_digest(path: Path) -> None:
    """Make the MLflow model at `path` load through `_load_pyfunc`, with its stored code's sha256 recorded."""
    from mlflow.models import Model
    from mlflow.models.model import MODEL_CODE_PATH

    meta = Model.load(str(path / "MLmodel"))
    conf = meta.flavors[mlflow.pyfunc.FLAVOR_NAME]
    conf[CODE_DIGEST] = _sha256(path / Path(conf[MODEL_CODE_PATH]).name)
    conf[mlflow.pyfunc.MAIN] = __name__  # MLflow's loader of models-from-code runs after our check
    meta.save(str(path / "MLmodel"))


def _load_pyfunc(data_path: str, model_config: dict | None = None):
    """MLflow's entry point for loading this model (the MLmodel file names this module): the stored code
    is verified against the digest recorded when the model was logged, then MLflow runs it."""
    from mlflow.models import Model
    from mlflow.models.model import MODEL_CODE_PATH
    from mlflow.pyfunc.model import _load_pyfunc as load_code_model

    root = Path(data_path)
    conf = Model.load(str(root / "MLmodel")).flavors[mlflow.pyfunc.FLAVOR_NAME]
    code = root / Path(str(conf.get(MODEL_CODE_PATH, "answering_model.py"))).name
    recorded = conf.get(CODE_DIGEST)
    found = _sha256(code) if code.is_file() else None
    if not recorded or found != recorded:
        now = f"its sha256 is {found}" if found else "it is missing"
        raise ModelCodeChanged(f"{code}: the model's code is not the code it was logged with ({now}, the MLmodel "
                               f"file records {recorded or 'no digest'}); refusing to run it. Log the model "
                               f"again, or answer with `tprepro predict --model-dir` on its model.pt")
    return load_code_model(str(root), model_config)


def log_answering_model(run, model_dir: Path, codec, example: str, staging: Path, name: str = ARTIFACT) -> None:
    """The MLflow model of `model_dir` as `run`'s logged model `name` (a tracking.run.Run), written
    first to `staging` (replaced; kept, so that a fallback to the local store can log it again)."""
    if staging.exists():
        shutil.rmtree(staging)
    save_answering_model(model_dir, codec, example, staging)
    run.log_model(staging, name, "pyfunc")
