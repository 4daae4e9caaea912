"""Helpers the Snakemake rules call (workflow/rules/*.smk): each stage's inputs, outputs, command, code
digest and params values (from its Stage declaration), rule all's targets, per-rule SLURM resources,
the invocation's parent runs, and the outputs' times settled by content before Snakemake reads them."""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.job_graph import jobs, stage_nodes, upstream_stages, writer_of
from tprepro.params.layered import Layered
from tprepro.params.references import DVC_REFERENCE, params_value, pattern, setting, wildcard_of

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


def settle_output_times(params: dict, workflow) -> None:
    """Before Snakemake reads any mtime: every job's outputs, and the stages' code digests, rewritten with the
    same content since they were made get back the times they were made at, unless their inputs are newer
    (tprepro.output_times), so Snakemake reruns what DVC reruns. Only in the invocation's own process (a SLURM
    job step reads the Snakefile again)."""
    import sys

    from tprepro.output_times import settle

    if not workflow.is_main_process:
        return
    restored = settle(made_in_order(params))
    if restored:
        print(f"tprepro: {len(restored)} outputs rewritten with the same content keep the times they were made at "
              f"(e.g. {restored[0]}; tprepro/output_times.py)", file=sys.stderr)


def made_in_order(params: dict, folder: Path = CODE_DIGESTS) -> list:
    """The stages' code digests and the project's own files a job reads (no job writes them: the report's
    captions), then every job's outputs with what they are made from (the outputs of the jobs it reads, the
    project's own files, its code digest), each job after those it reads (tprepro.output_times.Made). The
    own files are settled as outputs are: a copy of the project gives them new times, not new content."""
    from graphlib import TopologicalSorter

    from tprepro.job_graph import upstream
    from tprepro.output_times import Made

    all_jobs = jobs(params)
    before = upstream(all_jobs)
    written = {output for job in all_jobs for output in job.outputs}
    written |= {str(parent) for output in written for parent in Path(output).parents}  # folders holding outputs
    digests = {job.stage: str(folder / f"{job.stage}.sha256") for job in all_jobs}

    def own(job) -> tuple[str, ...]:
        return tuple(dep for dep in job.deps if dep not in written)

    def inputs(job) -> tuple[str, ...]:
        return (*(out for writer in before[job] for out in writer.outputs), *own(job), digests[job.stage])

    ordered = TopologicalSorter({job: before[job] for job in all_jobs}).static_order()
    settled_first = {*digests.values(), *(path for job in all_jobs for path in own(job))}
    return [*(Made((path,)) for path in sorted(settled_first)), *(Made(job.outputs, inputs(job)) for job in ordered)]


def settings(stage: str, params: dict) -> dict:
    """A rule's `params:` entries for stage `stage`'s params keys (Stage.params_keys), so Snakemake reruns
    the rule when one of their values changes, as DVC does. A key with `{wildcards}` becomes a
    function of the job's wildcards; the entry's name is the key in underscores (models_model). A shared
    key of a Layered entry may be left out of a params file (an optional key: None)."""
    from tprepro.experiments import stage as registered

    declared = registered(stage)
    optional = {key for entry in declared.params if isinstance(entry, Layered) for key in entry.shared_keys()}
    entries = {}
    for key in declared.params_keys:
        name = re.sub(r"\W", "_", key.replace("{", "").replace("}", ""))
        if name in entries:
            raise TpreproError(f"stage {stage}: params keys {key!r} and another both map to params.{name}")
        if "{" in key:
            entries[name] = _per_job(params, key)
        else:
            entries[name] = setting(params, key) if key not in optional else _optional_setting(params, key)
    return entries


def _optional_setting(params: dict, key: str):
    section, _, name = key.rpartition(".")
    return setting(params, section).get(name)


def _per_job(params: dict, key: str):
    """A params function of the job's wildcards: the value of `key` with them filled in."""
    return lambda wildcards: setting(params, key.format(**dict(wildcards.items())))


REPORT_CAPTIONS = "../report"  # workflow/report/, as the rule files (workflow/rules/) name it


def stage_outputs(stage: str, **names: str) -> list:
    """A rule's `output:`: the files and folders stage `stage`'s first DvcStage writes (its outs,
    results, metrics and plots), as Snakemake patterns (see pattern). A path without a suffix is a
    folder; a Reported path also goes to the Snakemake report, with its caption and category."""
    from snakemake.io import directory, report

    from tprepro.experiments import Reported, experiment_of, stage as registered

    outputs = []
    names = {**registered(stage).dvc[0].rule_names, **names}
    for path in registered(stage).dvc[0].written:
        output = pattern(path, **names)
        folder = not Path(output).suffix
        if folder:
            output = directory(output)
        if isinstance(path, Reported):
            output = report(output, caption=f"{REPORT_CAPTIONS}/{path.caption}.rst",
                            category=path.category or experiment_of(stage).report_category,
                            patterns=["{name}.png"] if folder else [])
        outputs.append(output)
    return outputs


def stage_inputs(stage: str, params: dict, **names: str) -> list[str]:
    """A rule's data inputs: its stage's dvc.yaml deps (first DvcStage) as Snakemake patterns, each
    standing for one upstream job. A job writes all its outputs, so of a job's files (a run's model.pt
    and train_metrics.json) the first named stands for the rest. A dep no stage writes is a folder of
    other jobs' outputs (a table's eval/ and models/ folders), or one of the project's own (the report's
    captions, workflow/report/, taken as it is): a folder of outputs stands for the first output under
    it of each job writing there, over the matrix values the rule has no wildcard for; of two stages
    writing into such folders, the later one's jobs stand for the earlier one's (an evaluation for
    its trained model)."""
    from tprepro.experiments import stage as registered

    declared = registered(stage).dvc[0]
    names = {**declared.rule_names, **names}
    own = {*(declared.matrix or ()), *(names.values() if declared.foreach else ())}  # the rule's wildcards
    nodes = stage_nodes(params)
    inputs, writers, folders = [], set(), {}
    for dep in declared.deps:
        path = pattern(dep, params, **names)
        writer = writer_of(path, nodes)  # (stage, wildcard values): one job
        if writer is None:
            folders[path] = [node for node in nodes if node.writes_under(path)]
            if not folders[path] and Path(path).exists():  # the project's own files (the report's captions)
                inputs.append(path)
            elif not folders[path]:
                raise TpreproError(f"stage {stage}: no stage writes {path} or under it, so no rule input stands for it")
        elif writer not in writers:
            writers.add(writer)
            inputs.append(path)
    gathered = [node for found in folders.values() for node in found]
    for folder, found in folders.items():
        for node in found:
            if not any(node.stage in upstream_stages(later, nodes) for later in gathered):
                first = next(out for out in node.outputs if out.startswith(f"{folder}/"))
                inputs += [first.format(**values) for values in node.values(params, keep=own)]
    return inputs


def final_outputs(params: dict) -> list[str]:
    """`rule all`'s inputs: one output of every job whose outputs no stage reads (the tables and
    the interpretation figures): its metrics file if it has one, else its first output."""
    nodes = stage_nodes(params)
    read = {name for node in nodes for name in upstream_stages(node, nodes)}
    return [node.summary.format(**values) for node in nodes if node.stage not in read for values in node.values(params)]


def stage_shell(stage: str, params: dict, **names: str) -> str:
    """A rule's shell command: stage `stage`'s dvc.yaml command (its first DvcStage), so both tools
    run one declared command. DVC's `${item.<key>}` becomes the job's `{wildcards.<key>}`, `${item}`
    and `${key}` the wildcard its DvcStage names (`foreach_as`, or `names`), any other reference its value
    in `params` (`n2f.seeds[0]`: an element of a list); the output goes to the rule's log."""
    from tprepro.experiments import stage as registered

    declared = registered(stage).dvc[0]
    names = {**declared.rule_names, **names}

    def snakemake(match: re.Match) -> str:
        wildcard = wildcard_of(match.group(1), names)
        return f"{{wildcards.{wildcard}}}" if wildcard is not None else params_value(match.group(1), params)

    return DVC_REFERENCE.sub(snakemake, declared.cmd) + " > {log} 2>&1"


def jobs_use_this_interpreter() -> None:
    """The jobs' `tprepro` is the one installed beside the interpreter running Snakemake: its bin folder
    (the venv's) goes first on PATH, which every job inherits, so `.venv/bin/snakemake` works without
    the venv on PATH and the commands stay dvc.yaml's. `--sdm conda` activates its environment in front."""
    here = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != here:
        os.environ["PATH"] = os.pathsep.join(filter(None, [here, path]))


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


def stage_resources(stage: str, params: dict, workflow) -> dict:
    """SLURM resources of a job of `stage` from params `cluster:`, the family its Stage declares (read by the
    slurm profile's plugin).

    The partition and GPUs are callables Snakemake evaluates once it has chosen its executor: on a
    workstation they are None, so its job listing shows no SLURM partition or GPU request. A family
    without a `runtime` gets each job's from `tprepro plan` (tprepro.plan.plan.slurm_runtime, by the
    job's wildcards); one without `cpus`, its CPUs (tprepro.plan.plan.job_cpus: a data job's, to finish
    its shards in about an hour). A job retried after a failure (the SLURM profile's `retries`; a time
    limit is one) asks for its Snakemake `attempt` times its runtime (training excepted: it requeues in
    allocations of one length), up to the family's time_limit."""
    from tprepro.experiments import stage as registered

    family = registered(stage).family
    job = params["cluster"][family]

    def runtime(wildcards, attempt):
        from tprepro.plan.plan import runtime_of

        if job["runtime"] is None or attempt > 1:
            minutes = runtime_of(params, stage, dict(wildcards.items()), attempt)
            if minutes is None and submits_to_slurm(workflow):
                raise TpreproError(f"params cluster.{family}.runtime: not set, and `tprepro plan` has no "
                                   "measurement to derive it from for this job (docs/plan.md): set it")
            return minutes
        return job["runtime"]
    cpus = job["cpus"]
    if cpus is None:
        def cpus(wildcards):
            from tprepro.plan.plan import planned_job

            return planned_job(params, stage, dict(wildcards.items())).cpus
    resources = {"runtime": runtime, "mem_mb": job["mem_mb"], "cpus_per_task": cpus}

    def on_slurm(value):
        return lambda wildcards: value if submits_to_slurm(workflow) else None

    if job["partition"]:
        resources["slurm_partition"] = on_slurm(job["partition"])
    if job["gpus"]:
        resources["gpu"] = on_slurm(job["gpus"])
    return resources


def start_pipeline_run(params: dict) -> None:
    """Snakemake's onstart: export the invocation's key, owned by this process (training jobs requeue
    only on preemption, train/requeue.py; MLflow runs find their parent by it) and open its parent run in every
    experiment's MLflow experiment (local jobs and SLURM's --export=ALL inherit the key). A key
    already exported (an outer invocation) is kept, and that invocation closes the parents."""
    from tprepro.experiments import mlflow_experiment, tracked_experiments
    from tprepro.invocation import INVOCATION_ENV, new_key
    from tprepro.tracking.parents import start_parent_runs

    if os.environ.get(INVOCATION_ENV):
        return
    os.environ[INVOCATION_ENV] = new_key()
    os.environ[_OWNED_ENV] = "1"
    start_parent_runs([mlflow_experiment(params, name) for name in tracked_experiments()])


def end_pipeline_run(params: dict, status: str = "FINISHED") -> None:
    """Snakemake's onsuccess/onerror: close the parent runs if this invocation opened them."""
    from tprepro.experiments import mlflow_experiment, tracked_experiments
    from tprepro.tracking.parents import finish_parent_run

    if os.environ.pop(_OWNED_ENV, None):
        for name in tracked_experiments():
            finish_parent_run(mlflow_experiment(params, name), status, owner=True)
