"""Helpers the Snakemake rules call (workflow/rules/*.smk): paths and per-rule SLURM resources."""

from __future__ import annotations

import os
from pathlib import Path

_OWNED_ENV = "TPREPRO_MLFLOW_PARENT_OWNED"  # set when this invocation created the parent run


def parent(path: str) -> str:
    """The folder holding `path` (a rule's params derived from its inputs, as Snakemake advises)."""
    return str(Path(path).parent)


def module_dirs(data: str, splits, modules) -> list[str]:
    """Dataset directories `<data>/<split>/<module>` of every (split, module) pair."""
    return [f"{data}/{split}/{module}" for split in splits for module in modules]


def cluster_resources(params: dict, family: str) -> dict:
    """SLURM resources of one rule family from params `cluster:` (read by the slurm profile's plugin)."""
    job = params["cluster"][family]
    resources = {"runtime": job["runtime"], "mem_mb": job["mem_mb"], "cpus_per_task": job["cpus"]}
    if job["partition"]:
        resources["slurm_partition"] = job["partition"]
    if job["gpus"]:
        resources["gpu"] = job["gpus"]
    return resources


def start_pipeline_run(experiment: str) -> None:
    """Snakemake's onstart: export the invocation's id (training jobs requeue only on preemption,
    train/requeue.py) and one MLflow parent run per invocation, its id exported to every job (local
    jobs and SLURM's --export=ALL inherit both). An id already exported (an outer invocation) is
    kept; a tracking server that does not answer means the local store (one warning)."""
    import uuid

    from tprepro.tracking import PARENT_ENV, start_parent_run
    from tprepro.train.requeue import INVOCATION_ENV

    os.environ.setdefault(INVOCATION_ENV, uuid.uuid4().hex)
    if not os.environ.get(PARENT_ENV):
        parent = start_parent_run(experiment, "pipeline")
        if parent:
            os.environ[PARENT_ENV] = parent
            os.environ[_OWNED_ENV] = "1"


def end_pipeline_run(experiment: str, status: str = "FINISHED") -> None:
    """Snakemake's onsuccess/onerror: close the parent run if this invocation started it."""
    from tprepro.tracking import PARENT_ENV, finish_parent_run

    if os.environ.pop(_OWNED_ENV, None):
        finish_parent_run(experiment, os.environ[PARENT_ENV], status)
