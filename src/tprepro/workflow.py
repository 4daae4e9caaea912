"""Helpers the Snakemake rules call (workflow/rules/*.smk): each stage's command, code digest and
params values (from its Stage declaration), paths, per-rule SLURM resources, the invocation's parent runs."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from tprepro.errors import TpreproError

_OWNED_ENV = "TPREPRO_MLFLOW_PARENT_OWNED"  # set when this invocation opened the parent runs


CODE_DIGESTS = Path(".snakemake/tprepro/code")  # one file per stage: its source files and their hashes


def code_digest(stage: str, root: str = "src/tprepro", folder: Path = CODE_DIGESTS) -> str:
    """One input file standing for stage `stage`'s source files (tprepro.experiments.code_files),
    so a job listing names one file, not forty.

    The file lists each source file's SHA-256. It is rewritten only when that list changes (an
    edit, a file added or removed), and then gets the current time, so the stage's outputs look
    older than their input and rerun. A missing file (a fresh checkout, a deleted .snakemake) takes
    the newest source file's mtime instead, so recreating it reruns nothing that was up to date."""
    from tprepro.experiments import code_files
    from tprepro.io import atomic_write_text

    files = code_files(stage, root)
    listing = "".join(f"{_source_hash(path, os.stat(path).st_mtime_ns)}  {path}\n" for path in files)
    target = folder / f"{stage}.sha256"
    existed = target.exists()
    if existed and target.read_text(encoding="utf-8") == listing:
        return str(target)
    atomic_write_text(target, listing)
    if not existed:
        newest = max(os.stat(path).st_mtime_ns for path in files)
        os.utime(target, ns=(newest, newest))
    return str(target)


@functools.cache
def _source_hash(path: str, mtime_ns: int) -> str:
    """A source file's SHA-256, read once per process and mtime (stages share most of their files)."""
    from tprepro.io import sha256_file

    return sha256_file(path)


def setting(params: dict, key: str):
    """The value of dotted params `key` (e.g. "n2f.algolisp.train")."""
    value = params
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise TpreproError(f"params: no key {key!r} (a stage's params in tprepro.experiments names it)")
        value = value[part]
    return value


def settings(stage: str, params: dict) -> dict:
    """A rule's `params:` entries for stage `stage`'s params keys (Stage.params), so Snakemake reruns
    the rule when one of their values changes, as DVC does. A key with `{wildcards}` becomes a
    function of the job's wildcards; the entry's name is the key in underscores (models_model)."""
    from tprepro.experiments import stage as registered

    entries = {}
    for key in registered(stage).params:
        name = re.sub(r"\W", "_", key.replace("{", "").replace("}", ""))
        if name in entries:
            raise TpreproError(f"stage {stage}: params keys {key!r} and another both map to params.{name}")
        entries[name] = _per_job(params, key) if "{" in key else setting(params, key)
    return entries


def _per_job(params: dict, key: str):
    """A params function of the job's wildcards: the value of `key` with them filled in."""
    return lambda wildcards: setting(params, key.format(**dict(wildcards.items())))


_DVC_REFERENCE = re.compile(r"\$\{([^}]+)\}")  # ${item.model}, ${key}, ${n2f.seeds[0]}


def stage_shell(stage: str, params: dict, **names: str) -> str:
    """A rule's shell command: stage `stage`'s dvc.yaml command (its first DvcStage), so both tools
    run one declared command. DVC's `${item.<key>}` becomes the job's `{wildcards.<key>}`, `${item}`
    and `${key}` the wildcard `names` gives them (e.g. key="dataset"), any other reference its value
    in `params` (`n2f.seeds[0]`: an element of a list); the output goes to the rule's log."""
    from tprepro.experiments import stage as registered

    def snakemake(match: re.Match) -> str:
        reference = match.group(1)
        if reference.startswith("item."):
            return f"{{wildcards.{reference.removeprefix('item.')}}}"
        if reference in ("item", "key"):
            return f"{{wildcards.{names[reference]}}}"
        key, index = re.fullmatch(r"(.+?)(?:\[(\d+)\])?", reference).groups()
        value = setting(params, key)
        return str(value[int(index)] if index is not None else value)

    return _DVC_REFERENCE.sub(snakemake, registered(stage).dvc[0].cmd) + " > {log} 2>&1"


def module_dirs(data: str, splits, modules) -> list[str]:
    """Dataset directories `<data>/<split>/<module>` of every (split, module) pair."""
    return [f"{data}/{split}/{module}" for split in splits for module in modules]


SLURM_EXECUTORS = ("slurm", "slurm-jobstep")  # the plugin submitting jobs, and the one running them


def submits_to_slurm(workflow) -> bool:
    """Whether this Snakemake invocation's jobs go to SLURM: its executor is the slurm plugin, or
    (a dry run, whose executor is "dryrun") a job limit is set, as the slurm profile does."""
    plugin = workflow.executor_plugin
    name = getattr(plugin, "name", None)
    return name in SLURM_EXECUTORS or (name == "dryrun" and workflow.nodes is not None)


def cluster_resources(params: dict, family: str, workflow) -> dict:
    """SLURM resources of one rule family from params `cluster:` (read by the slurm profile's plugin).

    The partition and GPUs are callables Snakemake evaluates once it has chosen its executor: on a
    workstation they are None, so its job listing shows no SLURM partition or GPU request."""
    job = params["cluster"][family]
    resources = {"runtime": job["runtime"], "mem_mb": job["mem_mb"], "cpus_per_task": job["cpus"]}

    def on_slurm(value):
        return lambda wildcards: value if submits_to_slurm(workflow) else None

    if job["partition"]:
        resources["slurm_partition"] = on_slurm(job["partition"])
    if job["gpus"]:
        resources["gpu"] = on_slurm(job["gpus"])
    return resources


def start_pipeline_run(params: dict) -> None:
    """Snakemake's onstart: export the invocation's key (training jobs requeue only on preemption,
    train/requeue.py; MLflow runs find their parent by it) and open its parent run in every
    experiment's MLflow experiment (local jobs and SLURM's --export=ALL inherit the key). A key
    already exported (an outer invocation) is kept, and that invocation closes the parents."""
    import uuid

    from tprepro.experiments import experiments, mlflow_experiment
    from tprepro.invocation import INVOCATION_ENV
    from tprepro.tracking.parents import start_parent_runs

    if os.environ.get(INVOCATION_ENV):
        return
    os.environ[INVOCATION_ENV] = uuid.uuid4().hex
    os.environ[_OWNED_ENV] = "1"
    start_parent_runs([mlflow_experiment(params, name) for name in experiments()])


def end_pipeline_run(params: dict, status: str = "FINISHED") -> None:
    """Snakemake's onsuccess/onerror: close the parent runs if this invocation opened them."""
    from tprepro.experiments import experiments, mlflow_experiment
    from tprepro.tracking.parents import finish_parent_run

    if os.environ.pop(_OWNED_ENV, None):
        for name in experiments():
            finish_parent_run(mlflow_experiment(params, name), status, owner=True)
