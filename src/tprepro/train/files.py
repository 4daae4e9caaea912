"""The files of a training run's model folder and checkpoint folder, named once for the stages, DVC outs and
tools that write and read them, and where every training writes its progress."""

from pathlib import Path

from tprepro.errors import TpreproError

MODEL_FILE = "model.pt"  # the trained model as exported for evaluation and serving
TRAIN_METRICS = "train_metrics.json"  # the run's summary: steps, loss, seconds, where it resumed from
CURVE_FILE = "learning_curve.csv"  # held-out scores at every checkpoint (evaluate/curves.py), in both folders
CHECKPOINT_FILE = "checkpoint.pt"  # the checkpoint folder's resumable training state (train/checkpoint.py)
MLFLOW_MODEL = "mlflow_model"  # the checkpoint folder's MLflow model, staged before it is logged
PROGRESS = "progress"  # logs/progress/: every training's progress log, where `tprepro status` finds it
MODEL_FOLDERS_SHOWN = 6  # a folder of model folders: how many of them an error names


def progress_log(experiment: str, job: str) -> Path:
    """logs/progress/<experiment>/<job>.log: every training writes its progress lines there too, whatever
    its stderr is (a Snakemake job log, `dvc exp run > file 2>&1`, nohup.out, a pipe, a terminal)."""
    return Path("logs") / PROGRESS / experiment / f"{job}.log"


def no_trained_model(model_dir: Path, missing: str = MODEL_FILE) -> TpreproError:
    """The error for a `--model-dir` that lacks `missing`: a folder that does not exist is named as
    missing (with the model folders beside it, if any), a folder of model folders (e.g. mathematics/models)
    names them, any other says to train first."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        what = "is a file, not a folder" if model_dir.exists() else "does not exist"
        parent = next((folder for folder in model_dir.parents if folder.is_dir()), Path("."))
        beside = _model_folders(parent)
        return TpreproError(f"{model_dir}: no such model folder ({what}; the nearest folder that exists is "
                            f"{parent}/); give a trained model's folder"
                            + (f", one of: {beside}" if beside else ", e.g. mathematics/models/transformer-s1"))
    models = _model_folders(model_dir)
    if models:
        return TpreproError(f"{model_dir} holds model folders, not a model: give one of them as --model-dir: "
                            f"{models}")
    return TpreproError(f"{model_dir / missing}: no trained model here (run the train stage first)")


def _model_folders(folder: Path) -> str:
    """The model folders in `folder`, the first MODEL_FOLDERS_SHOWN of them named ("" if none)."""
    models = sorted(child for child in folder.iterdir() if (child / MODEL_FILE).is_file())
    more = f" and {len(models) - MODEL_FOLDERS_SHOWN} more" if len(models) > MODEL_FOLDERS_SHOWN else ""
    return ", ".join(str(child) for child in models[:MODEL_FOLDERS_SHOWN]) + more
