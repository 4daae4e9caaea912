"""Where a run came from: the code's commit, the command, the job's log file and the scheduler's job."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def log_file() -> Path | None:
    """The file this process's output goes to (a stage's `> {log} 2>&1`), None for a terminal or pipe."""
    try:
        target = Path(os.readlink("/proc/self/fd/1"))
    except OSError:
        return None
    return target if target.is_file() else None


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def source_tags() -> dict[str, str]:
    """The code a run comes from, in MLflow's own fields (shown in the UI's Source column) and as
    `git_commit` (with "-dirty" when tracked files had uncommitted changes)."""
    commit = git_commit()
    tags = {"git_commit": commit, "mlflow.source.type": "LOCAL", "mlflow.source.name": "tprepro"}
    if commit != "unknown":
        tags["mlflow.source.git.commit"] = commit.removesuffix("-dirty")
    return tags


# Where a job ran: MLflow tag -> environment variable (set by SLURM inside a job).
JOB_ENVIRONMENT = {
    "slurm.job_id": "SLURM_JOB_ID",
    "slurm.array_job_id": "SLURM_ARRAY_JOB_ID",
    "slurm.array_task_id": "SLURM_ARRAY_TASK_ID",
    "slurm.partition": "SLURM_JOB_PARTITION",
    "slurm.node": "SLURMD_NODENAME",
    "slurm.job_gpus": "SLURM_JOB_GPUS",
    "slurm.step_gpus": "SLURM_STEP_GPUS",
    "cuda_visible_devices": "CUDA_VISIBLE_DEVICES",
}


def job_environment_tags() -> dict[str, str]:
    """The scheduler's job ID and GPU allocation as MLflow tags (empty outside a SLURM job)."""
    return {tag: os.environ[name] for tag, name in JOB_ENVIRONMENT.items() if os.environ.get(name)}


def log_outputs(run, paths, artifact_path: str) -> None:
    """`paths` as artifacts of `run` under `artifact_path`, and the stage's log file (its redirected
    output, if any) under logs/: what a user opens from the run's page."""
    for path in paths:
        run.log_artifact(path, artifact_path)
    log = log_file()
    if log is not None:
        run.log_artifact(log, "logs")
