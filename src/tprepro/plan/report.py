"""A plan as a terminal table (one line per rule, or per job) and as JSON."""

from __future__ import annotations

from collections import defaultdict

from tprepro.plan.plan import MARGIN, MIN_RUNTIME, Plan, PlannedJob


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unmeasured"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def size(count: float | None) -> str:
    if count is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if count < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} PB"


def _work(planned: PlannedJob) -> str:
    done = planned.work
    if done.kind == "fixed":
        return "fixed"
    items = "?" if done.items is None else f"{done.items:,}"
    text = f"{items} {done.unit}"
    return f"{text} ({done.steps:,} x {done.batch_size:,})" if done.kind == "train" else text


def _source(group: list[PlannedJob]) -> str:
    sources = list(dict.fromkeys(p.estimate.source for p in group))
    return sources[0] if len(sources) == 1 else f"{sources[0]} (+{len(sources) - 1} more)"


def table(plan: Plan, per_job: bool = False) -> str:
    """The plan's lines: a row per rule (per job with `per_job`), then the totals and their sources."""
    groups: dict[str, list[PlannedJob]] = defaultdict(list)
    for planned in plan.jobs:
        groups[planned.job.name if per_job else planned.job.rule].append(planned)
    header = f"{'job' if per_job else 'rule':<34} {'n':>4} {'work per job':<46} {'device':<7} {'per job':>11} " \
             f"{'all':>11} {'disk':>9} {'SLURM min':>9}  source"
    lines = [f"plan of {plan.params_path}", header, "-" * len(header)]
    for name, group in groups.items():
        first = group[0]
        seconds = [p.estimate.seconds for p in group]
        known = None if any(s is None for s in seconds) else sum(seconds)
        per = duration(max(seconds)) if known is not None else "unmeasured"
        disk = None if any(p.estimate.disk_bytes is None for p in group) else sum(p.estimate.disk_bytes for p in group)
        runtimes = {p.runtime for p in group}
        runtime = "local" if first.job.family is None else "/".join(str(r) if r else "-" for r in sorted(
            runtimes, key=lambda r: r or 0))
        lines.append(f"{name[:34]:<34} {len(group):>4} {_work(first)[:46]:<46} {first.device:<7} {per:>11} "
                     f"{duration(known):>11} {size(disk) if first.work.kind in ('generate', 'train') else '':>9} "
                     f"{runtime:>9}  {_source(group)}")
        for note in dict.fromkeys(p.note for p in group if p.note):
            lines.append(f"{'':<34}   ! {note}")
    totals = plan.totals()
    lines += ["", f"jobs: {totals['jobs']} ({totals['unmeasured']} unmeasured, {totals['extrapolated']} extrapolated; "
                  f"totals below leave the unmeasured out)",
              f"GPU-hours: {totals['gpu_hours']:.2f}   CPU-hours: {totals['cpu_hours']:.2f}   disk: "
              f"{size(totals['disk_bytes'])}" + (f" (+{totals['disk_unknown']} jobs' unknown)"
                                                   if totals['disk_unknown'] else ""),
              f"wall time: {duration(plan.wall_s)} on {plan.gpus} GPU(s) and {plan.cores} CPU job slots; "
              f"critical path {duration(plan.critical_path_s)}: {' -> '.join(plan.critical_path)}",
              f"SLURM runtime where the params set none: {MARGIN} x the estimate, at least {MIN_RUNTIME} min"]
    if totals["requeued"]:
        lines.append(f"requeued jobs: {totals['requeued']} (above their SLURM limit; see the notes)")
    lines += [f"measurements: {path}" for path in plan.measurements] or ["measurements: none found"]
    return "\n".join(lines)


def as_json(plan: Plan) -> dict:
    return {
        "params": plan.params_path, "device": plan.device, "gpus": plan.gpus, "cores": plan.cores,
        "totals": plan.totals(), "critical_path": plan.critical_path, "measurements": plan.measurements,
        "runtime_rule": {"margin": MARGIN, "min_minutes": MIN_RUNTIME},
        "jobs": [{"rule": p.job.rule, "stage": p.job.stage, "item": p.job.values, "outputs": list(p.job.outputs),
                  "family": p.job.family, "work": {"kind": p.work.kind, "items": p.work.items, "unit": p.work.unit,
                                                   "preset": p.work.preset, "steps": p.work.steps,
                                                   "batch_size": p.work.batch_size},
                  "device": p.device, "seconds": p.estimate.seconds, "status": p.estimate.status,
                  "source": p.estimate.source, "disk_bytes": p.estimate.disk_bytes, "runtime_min": p.runtime,
                  "runtime_source": p.runtime_source, "segments": p.segments, "note": p.note}
                 for p in plan.jobs],
    }
