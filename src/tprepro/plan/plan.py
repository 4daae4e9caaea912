"""A params file's plan: every job with its work, device kind, estimate, disk and SLURM runtime; the
totals and the wall time along the DAG."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.params.reads import for_the_record
from tprepro.plan.calibrate import CPU, Calibration, cpu_factor, cpu_machines, scaled
from tprepro.plan.cheaper import with_cheaper_notes
from tprepro.plan.critical_path import critical_path, schedule
from tprepro.plan.estimate import Estimate, estimate
from tprepro.job_graph import Job, jobs, upstream
from tprepro.plan.machine import Machine, this_machine
from tprepro.plan.speeds import BENCHMARKS, Measurements, load_measurements
from tprepro.plan.work import work
from tprepro.work import Work

MARGIN = 1.5  # a derived SLURM runtime: the estimate times this (its own error, a busy node's start-up),
SLOWER_NODE = 2.0  # a CPU job's also times this (a node of the same class up to 2x slower than the measured one),
MIN_RUNTIME = 10  # rounded up to whole minutes, at least this many minutes (start-up on a busy node, a slow file system);
#                   a job retried after its limit (the SLURM profile's `retries`) asks for `attempt` times it
WARNING_MINUTES = 5  # training checkpoints on SLURM's USR1, 5 minutes before the limit (profiles/slurm)
DATA_JOB_TARGET_S = 3600  # a data job with `cluster.data.cpus: null` gets the CPUs that finish it in about this


@dataclass(frozen=True)
class PlannedJob:
    job: Job
    work: Work
    device: str  # the device kind it is priced on
    estimate: Estimate
    runtime: int | None  # SLURM minutes requested (None: a local rule, or unpriced and not set)
    runtime_source: str  # "params" or how it was derived
    segments: int = 1  # SLURM allocations it takes (> 1: killed at its limit and requeued)
    note: str = ""
    cpus: int = 1  # processes it runs (a data job generates its shards in parallel)
    cpu_factor: float = 1.0  # its measured CPU seconds were multiplied by this
    cpu_factor_from: str = ""  # why: cluster.<family>.cpu_factor, or this machine's calibration

    @property
    def wall_s(self) -> float | None:
        return wall_seconds(self.estimate.seconds, self.work, self.cpus)


def wall_seconds(seconds: float | None, work_: Work, cpus: int) -> float | None:
    """A job's seconds from start to end: its CPU seconds shared by its processes, whole shards each."""
    if seconds is None or cpus == 1 or not work_.shards:
        return seconds
    return seconds / work_.shards * math.ceil(work_.shards / cpus)


@dataclass
class Plan:
    params_path: str
    device: str | None  # --device given
    gpus: int
    cores: int
    jobs: list[PlannedJob]
    critical_path_s: float
    critical_path: list[str]
    wall_s: float
    measurements: list[str] = field(default_factory=list)  # the files used
    cpu_machines: dict = field(default_factory=dict)  # machine description -> the CPU measurements made on it
    machine: Machine | None = None  # this one
    calibration: Calibration | None = None

    def totals(self) -> dict:
        """Sums over the jobs. A total that would leave an unmeasured job out is None (unknown), with the
        count of those jobs beside it; the wall time and critical path of the priced jobs (an unmeasured
        job counted as 0 s) are kept apart as priced_*."""
        priced = [p for p in self.jobs if p.estimate.seconds is not None]
        unmeasured = lambda on_gpu: sum(p.estimate.seconds is None and (p.device != CPU) == on_gpu  # noqa: E731
                                        for p in self.jobs)
        priced_hours = lambda on_gpu: sum(  # noqa: E731
            p.estimate.seconds for p in priced if (p.device != CPU) == on_gpu) / 3600
        hours = lambda on_gpu: None if unmeasured(on_gpu) else priced_hours(on_gpu)  # noqa: E731
        return {"jobs": len(self.jobs), "unmeasured": len(self.jobs) - len(priced),
                "extrapolated": sum(p.estimate.status == "extrapolated" for p in self.jobs),
                "gpu_hours": hours(True), "gpu_unmeasured": unmeasured(True),
                "cpu_hours": hours(False), "cpu_unmeasured": unmeasured(False),
                "priced_gpu_hours": priced_hours(True), "priced_cpu_hours": priced_hours(False),
                "disk_bytes": sum(p.estimate.disk_bytes or 0 for p in self.jobs),
                "disk_unknown": sum(p.estimate.disk_bytes is None and p.work.kind in ("generate", "train")
                                    for p in self.jobs),
                "requeued": sum(p.segments > 1 for p in self.jobs),
                "critical_path_s": self.critical_path_s if len(priced) == len(self.jobs) else None,
                "wall_s": self.wall_s if len(priced) == len(self.jobs) else None,
                "priced_critical_path_s": self.critical_path_s, "priced_wall_s": self.wall_s,
                "longest_data_job_s": max((p.wall_s for p in priced if p.work.kind == "generate"), default=None)}


def job_device(params: dict, job: Job, device: str | None) -> str:
    """The device kind a job is priced on: `device` (--device) for the GPU rule families, else the
    family's `cluster.<family>.device` (default cpu); local rules and CPU families run on CPUs."""
    if job.family is None:
        return CPU
    family = params["cluster"][job.family]
    if not family["gpus"]:
        return CPU
    return device or family.get("device") or CPU


def slurm_runtime(params: dict, job: Job, work_: Work, seconds: float | None, on_cpu: bool = False,
                  attempt: int = 1) -> tuple[int | None, str, int, str]:
    """(minutes requested, from where, allocations, note) of one job under the SLURM profile, at its
    `attempt` (Snakemake's: 2 after one failure, the limit's included). A job priced on CPUs (`on_cpu`) asks
    for enough that a node SLOWER_NODE x slower finishes it; a job other than training asks for `attempt`
    times its first runtime, up to the family's time_limit (a training job resumes from its checkpoint in
    allocations of the same length instead)."""
    if job.family is None:
        return None, "local rule", 1, ""
    family = params["cluster"][job.family]
    limit = family.get("time_limit")
    if family["runtime"] is not None:
        runtime, source = family["runtime"], f"params cluster.{job.family}.runtime"
    elif seconds is None:  # unpriced: the partition's limit where one is set, else nothing to request
        return (limit, f"cluster.{job.family}.time_limit (unpriced)", 1, "") if limit is not None \
            else (None, "not set, and unpriced", 1, "")
    else:
        cover = SLOWER_NODE if on_cpu else 1.0
        runtime = max(MIN_RUNTIME, math.ceil(seconds * MARGIN * cover / 60))
        source = f"{MARGIN} x estimate" + (f" x {SLOWER_NODE} (a slower node)" if on_cpu else "")
    ceiling = limit if family["runtime"] is None or limit is None else max(limit, family["runtime"])
    if work_.kind != "train" and attempt > 1:
        runtime, source = runtime * attempt, f"{source}, x {attempt} (attempt {attempt})"
    if ceiling is not None and runtime > ceiling:
        runtime, source = ceiling, f"cluster.{job.family}.time_limit"
    if seconds is None or seconds <= runtime * 60:
        return runtime, source, 1, _slow_node_note(job, work_, seconds, runtime, on_cpu)
    if work_.kind != "train":
        return runtime, source, 1, f"estimate above its {runtime} min: {_retried(work_)}"
    segments = math.ceil(seconds / (max(1, runtime - WARNING_MINUTES) * 60))
    note = f"requeued: {segments} allocations of {runtime} min"
    if segments - 1 > work_.max_requeues:
        note += f", more than max_requeues ({work_.max_requeues}) allows: it would fail"
    return runtime, source, segments, note


def _slow_node_note(job: Job, work_: Work, seconds: float | None, runtime: int, on_cpu: bool) -> str:
    """What a CPU job whose runtime a node SLOWER_NODE x slower would pass goes through (none: "")."""
    if not on_cpu or seconds is None or seconds * SLOWER_NODE <= runtime * 60 or work_.kind == "train":
        return ""
    return f"a node {SLOWER_NODE:g}x slower would pass its {runtime} min: {_retried(work_)}"


def _retried(work_: Work) -> str:
    """What happens to a job (not a training) killed at its limit."""
    kept = "keeping its finished shards" if work_.kind == "generate" and (work_.shards or 0) > 1 else "from the start"
    return f"killed, then retried with a longer limit (the SLURM profile's retries), {kept}"


def known_devices(params: dict, measurements: Measurements) -> set[str]:
    """The device kinds a plan can price on: cpu, those with a measurement, those the params' families name."""
    return {CPU, *(kind for kind, _ in measurements.throughput), *measurements.stage_rates,
            *measurements.data_rates, *(family["device"] for family in params["cluster"].values()
                                         if family.get("device"))}


def job_cpus(params: dict, job: Job, work_: Work, seconds: float | None) -> int:
    """Processes of one job: `cluster.<family>.cpus`, or where that is null for a data job, as many as
    finish its shards in about DATA_JOB_TARGET_S (whole shards per process; at most one per shard)."""
    if job.family is None:
        return 1
    cpus = params["cluster"][job.family]["cpus"]
    if cpus is not None:
        return cpus
    if work_.kind != "generate" or not work_.shards or seconds is None:
        return 1
    per_process = max(1, math.floor(DATA_JOB_TARGET_S / (seconds / work_.shards)))
    return min(work_.shards, math.ceil(work_.shards / per_process))


def make_plan(params: dict, params_path: str = "params.yaml", device: str | None = None, gpus: int = 1,
              cores: int | None = None, measurements: Measurements | None = None,
              calibration: Calibration | None = None) -> Plan:
    """The plan of `params`; GPU-family jobs priced on `device` (default: their family's device); CPU jobs'
    measured seconds multiplied by their family's cpu_factor, else by `calibration`'s (this machine's)."""
    if gpus < 1:
        raise TpreproError(f"--gpus: expected at least 1, got {gpus}")
    measurements = measurements if measurements is not None else load_measurements(BENCHMARKS)
    known = known_devices(params, measurements)
    if device is not None and device not in known:
        raise TpreproError(f"--device {device}: not a device kind measured or named in the params "
                           f"({', '.join(sorted(known))})")
    found = jobs(params)
    before = upstream(found)
    planned = []
    for job in found:
        done = work(params, job.stage, job.values)
        kind = job_device(params, job, device)
        factor, why = cpu_factor(params, job, done, calibration) if kind == CPU else (1.0, "")
        guess = scaled(estimate(measurements, kind, job.stage, done), factor, why)
        cpus = job_cpus(params, job, done, guess.seconds)
        runtime, source, segments, note = slurm_runtime(params, job, done, wall_seconds(guess.seconds, done, cpus),
                                                        on_cpu=kind == CPU)
        planned.append(PlannedJob(job, done, kind, guess, runtime, source, segments, note, cpus, factor, why))
    planned = with_cheaper_notes(planned, measurements)
    seconds = {p.job: p.wall_s or 0.0 for p in planned}
    kinds = {p.job: p.device for p in planned}
    on_gpus = any(kind != CPU for kind in kinds.values())
    cores = cores if cores is not None else (100 if on_gpus else 2)  # the SLURM profile's job limit; a workstation
    path_s, path = critical_path(found, before, seconds)
    wall = schedule(found, before, seconds, lambda job: "gpu" if kinds[job] != CPU else "cpu",
                    {"gpu": gpus, "cpu": cores})
    used = sorted({t.path for t in measurements.throughput.values()} | {r.path for r in measurements.stage_rates.values()}
                  | {r.path for r in measurements.data_rates.values()})
    return Plan(str(params_path), device, gpus, cores, planned, path_s, [job.name for job in path], wall, used,
                cpu_machines(measurements), this_machine(), calibration)


def planned_job(params: dict, stage: str, wildcards: dict) -> PlannedJob:
    """The planned job of `stage` with Snakemake `wildcards` (workflow.stage_resources' runtime and CPUs)."""
    plan = _cached_plan(params)
    wanted = {name: str(value) for name, value in wildcards.items()}
    for planned in plan.jobs:
        if planned.job.stage == stage and dict(planned.job.rule_wildcards) == wanted:
            return planned
    raise TpreproError(f"stage {stage}: the plan has no job with wildcards {dict(wildcards)}")


def runtime_of(params: dict, stage: str, wildcards: dict, attempt: int = 1) -> int | None:
    """The SLURM minutes of the job of `stage` with Snakemake `wildcards`, at its `attempt`."""
    planned = planned_job(params, stage, wildcards)
    if attempt == 1:
        return planned.runtime
    return slurm_runtime(params, planned.job, planned.work, planned.wall_s, planned.device == CPU, attempt)[0]


_PLANS: dict[str, Plan] = {}  # plan_key(params) -> its plan: one plan per settings in a Snakemake process


def plan_key(params: dict) -> str:
    """The settings' digest: equal settings share a plan, whichever mapping holds them."""
    body = json.dumps(for_the_record(params), sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def _cached_plan(params: dict) -> Plan:
    key = plan_key(params)
    if key not in _PLANS:
        _PLANS[key] = make_plan(params)
    return _PLANS[key]
