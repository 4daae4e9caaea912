"""The files of a training run's model folder, named once for the stages that write and read them, and
where every training writes its progress."""

from pathlib import Path

MODEL_FILE = "model.pt"  # the trained model as exported for evaluation and serving
TRAIN_METRICS = "train_metrics.json"  # the run's summary: steps, loss, seconds, where it resumed from
PROGRESS = "progress"  # logs/progress/: every training's progress log, where `tprepro status` finds it


def progress_log(experiment: str, job: str) -> Path:
    """logs/progress/<experiment>/<job>.log: every training writes its progress lines there too, whatever
    its stderr is (a Snakemake job log, `dvc exp run > file 2>&1`, nohup.out, a pipe, a terminal)."""
    return Path("logs") / PROGRESS / experiment / f"{job}.log"
