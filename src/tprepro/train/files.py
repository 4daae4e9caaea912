"""The files of a training run's model folder, named once for the stages that write and read them, and
where a training that no scheduler logs writes its progress."""

import os
import stat
import sys
from pathlib import Path

MODEL_FILE = "model.pt"  # the trained model as exported for evaluation and serving
TRAIN_METRICS = "train_metrics.json"  # the run's summary: steps, loss, seconds, where it resumed from
PROGRESS_LOGS = Path("logs/progress")  # under the project, beside Snakemake's job logs (`tprepro status` reads both)


def progress_log(experiment: str, job: str) -> Path | None:
    """logs/progress/<experiment>/<job>.log for a training whose stderr is no file (`dvc repro`, `dvc exp run`,
    by hand): there its progress lines go too. None when stderr is a file: a Snakemake job's log already
    holds them."""
    try:
        redirected = stat.S_ISREG(os.fstat(sys.stderr.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # no real stderr (an embedding process)
        redirected = False
    return None if redirected else PROGRESS_LOGS / experiment / f"{job}.log"
