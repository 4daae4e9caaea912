"""One job's estimated seconds and disk on one device kind, with where the numbers come from.

A job's seconds come from, in this order: the rate its stage (and preset) had in a measured pipeline
run on that device kind (stages/<kind>.json); for training and decoding, a preset's benchmark
(throughput/<kind>/<preset>.json) on the job's own task (the experiment whose data it trained on: a
sample's length is the task's) plus the stage's measured fixed part where there is one; a measured
preset of the same architecture on the same device kind and task, scaled by parameter count (6 N FLOPs
per token either way, so seconds per item go as N): "extrapolated from <preset>". Anything else is
"unmeasured": never guessed, and never carried from one task to another."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tprepro.plan.speeds import Measurements
from tprepro.work import Work

WEIGHT_COPIES = 5  # a training job's fp32 weight copies on disk: its checkpoint (weights + Adam's two
#                    moments, one file, overwritten), model.pt and the MLflow model it logs


@dataclass(frozen=True)
class Estimate:
    seconds: float | None  # None: unmeasured (or its size is not in the params)
    source: str  # where the number comes from, or why there is none
    disk_bytes: float | None = None  # what the job leaves on disk; None: not known

    @property
    def status(self) -> str:
        if self.seconds is None:
            return "unmeasured"
        return "extrapolated" if self.source.startswith("extrapolated") else "measured"


@cache
def parameter_count(preset: str) -> int:
    """A preset's weights at `tprepro models`' reference sizes."""
    from tprepro.models.registry import preset_parameters

    return preset_parameters(preset)


def _arch(preset: str) -> str:
    from tprepro.models.registry import resolve_model_config

    return resolve_model_config(preset, {}, where=preset).arch


def task_of(stage: str) -> str:
    """The experiment whose data a stage's jobs run on (the task a benchmark must have measured)."""
    from tprepro.experiments import experiment_of

    return experiment_of(stage).name


def benchmark_on_task(measurements: Measurements, kind: str, preset: str, stage: str):
    """`preset`'s benchmark on `kind` if it trained on `stage`'s task, else None."""
    benchmark = measurements.throughput.get((kind, preset))
    return benchmark if benchmark is not None and benchmark.task == task_of(stage) else None


def _measured(measurements: Measurements, kind: str, stage: str, work: Work, preset: str):
    """(fixed seconds, seconds per item, source) measured for `preset` itself at the job's task, or None."""
    rates = measurements.stage_rates.get(kind)
    rate = rates.rate(stage, preset if work.kind in ("train", "decode") else None) if rates else None
    if rate is not None:
        return rate.fixed_s, rate.seconds_per_item, rates.measured_by(stage)
    benchmark = benchmark_on_task(measurements, kind, preset, stage) if work.kind in ("train", "decode") else None
    speed = None if benchmark is None else (
        benchmark.samples_per_s if work.kind == "train" else benchmark.decode_problems_per_s)
    if speed is None:
        return None
    fixed = rates.stages.get(stage, {}).get("fixed_s") if rates else None
    return (fixed or 0.0, 1 / speed, f"benchmark of {preset} on {benchmark.device} ({benchmark.commit}, "
            f"{benchmark.date})" + ("" if fixed is not None else f"; no job overhead measured on {kind}"))


def _neighbour(measurements: Measurements, kind: str, stage: str, work: Work):
    """The measured preset of the same architecture and task nearest in parameter count, with its numbers."""
    arch, size = _arch(work.preset), parameter_count(work.preset)
    candidates = {p for k, p in measurements.throughput if k == kind and benchmark_on_task(measurements, k, p, stage)}
    rates = measurements.stage_rates.get(kind)
    if rates is not None:
        candidates |= set(rates.stages.get(stage, {}).get("per_preset", {}))
    found = [(abs(parameter_count(p) / size - 1), p) for p in sorted(candidates - {work.preset}) if _arch(p) == arch]
    for _, preset in sorted(found):
        measured = _measured(measurements, kind, stage, work, preset)
        if measured is not None:
            return preset, measured
    return None


def _generated_bytes(measurements: Measurements, kind: str, stage: str, work: Work) -> float | None:
    """What a data job leaves on disk: from its module family's measured bytes (data/<kind>.json's disk), else
    its stage's bytes per item in a pipeline run; None where neither is measured or its size is unknown."""
    if work.items is None:
        return None
    family = measurements.data_rates[kind].disk.get(work.module_family) \
        if work.module and kind in measurements.data_rates else None
    if family is not None:
        return family.bytes(work.items, work.shards or 1)
    rates = measurements.stage_rates.get(kind)
    per_item = rates.stages.get(stage, {}).get("bytes_per_item") if rates else None
    return per_item * work.items if per_item is not None else None


def _fitted_data_job(measurements: Measurements, kind: str, work: Work) -> tuple[float, str] | None:
    """(seconds, source) of a Mathematics data job from its (split, module)'s fit, or None."""
    rates = measurements.data_rates.get(kind)
    if work.kind != "generate" or work.module is None or rates is None:
        return None
    fit = rates.jobs.get(f"{work.split}/{work.module}")
    if fit is None:
        return None
    sizes = " and ".join(f"{size:,}" for size in fit.sizes)
    source = f"its (split, module)'s data jobs at {sizes} problems on {kind} ({rates.commit}, {rates.date})"
    return fit.seconds(work.items), source


def estimate(measurements: Measurements, kind: str, stage: str, work: Work) -> Estimate:
    """Job seconds and disk of `work` (a job of `stage`) on device kind `kind`."""
    disk = WEIGHT_COPIES * 4 * parameter_count(work.preset) if work.kind == "train" else None
    if work.kind == "generate":
        disk = _generated_bytes(measurements, kind, stage, work)
    if work.items is None and work.kind != "fixed":
        return Estimate(None, "its size is in release files, not in the params", disk)
    fitted = _fitted_data_job(measurements, kind, work)
    if fitted is not None:
        return Estimate(*fitted, disk)
    if work.preset is None:
        rates = measurements.stage_rates.get(kind)
        rate = rates.rate(stage, None, work.module) if rates else None
        measured_modules = rates.stages.get(stage, {}).get("per_module") if rates else None
        if rate is None and measured_modules and work.items is not None:
            import statistics

            per_item = statistics.median(measured_modules.values())
            return Estimate(rates.stages[stage]["fixed_s"] + per_item * work.items,
                            f"extrapolated from the median of {len(measured_modules)} modules measured in a pipeline "
                            f"run on {kind} ({rates.commit}, {rates.date}); its module not measured", disk)
        if rate is None:
            what = f"module {work.module}" if work.module and rates and stage in rates.stages else f"{stage} job"
            return Estimate(None, f"unmeasured: no {what} measured on {kind}", disk)
        seconds = rate.fixed_s + rate.seconds_per_item * (work.items or 0)
        return Estimate(seconds, rates.measured_by(stage), disk)
    measured = _measured(measurements, kind, stage, work, work.preset)
    if measured is not None:
        fixed, per_item, source = measured
        return Estimate(fixed + per_item * work.items, source, disk)
    neighbour = _neighbour(measurements, kind, stage, work)
    if neighbour is None:
        return Estimate(None, f"unmeasured: no {work.preset} (nor a preset of its architecture) measured on {kind} "
                              f"at {task_of(stage)}", disk)
    preset, (fixed, per_item, source) = neighbour
    scale = parameter_count(work.preset) / parameter_count(preset)
    return Estimate(fixed + per_item * scale * work.items,
                    f"extrapolated from {preset} by parameter count (x{scale:.3g}; {source})", disk)
