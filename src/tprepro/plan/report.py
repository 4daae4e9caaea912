"""A plan as a terminal table (one line per rule, or per job) and as JSON."""

from __future__ import annotations

import textwrap
from collections import defaultdict

from tprepro.plan.plan import MARGIN, MIN_RUNTIME, SLOWER_NODE, Plan, PlannedJob


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


WIDTH = 160  # the table's columns at most


def _sources(plan: Plan) -> dict[str, int]:
    """Each distinct estimate source, numbered in order of first use: printed once, below the table."""
    return {source: number for number, source in
            enumerate(dict.fromkeys(p.estimate.source for p in plan.jobs), start=1)}


def _source_marks(group: list[PlannedJob], numbers: dict[str, int]) -> str:
    marks = list(dict.fromkeys(numbers[p.estimate.source] for p in group))
    shown = ",".join(f"[{m}]" for m in marks[:3])
    return shown + (f" +{len(marks) - 3}" if len(marks) > 3 else "")


def _hours(total: float | None, unmeasured: int, priced: float) -> str:
    return f"{total:.2f}" if total is not None else f"unknown ({unmeasured} jobs unmeasured); {priced:.2f} of the priced jobs"


def _wrapped(parts: list[str], separator: str = "   ") -> list[str]:
    """`parts` on one line where it fits in WIDTH, else as few lines as hold them whole."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(separator) + len(part) <= WIDTH:
            lines[-1] += separator + part
        else:
            lines.append(part)
    return lines


def _machines(plan: Plan) -> list[str]:
    """The CPUs the CPU rates were measured on, this machine, and the factor CPU jobs were priced with."""
    lines = [line for machine, files in plan.cpu_machines.items()
             for line in textwrap.wrap(f"CPU rates measured on {machine}: {', '.join(files)}", WIDTH,
                                       subsequent_indent="    ")]
    here = f"this machine: {plan.machine.describe()}" if plan.machine else "this machine: unknown"
    factors = sorted({(p.cpu_factor, p.cpu_factor_from) for p in plan.jobs if p.cpu_factor_from.startswith("cluster.")})
    if plan.calibration is not None:
        lines += textwrap.wrap(f"{here}; calibrated {plan.calibration.describe()}", WIDTH, subsequent_indent="    ")
    else:
        lines.append(f"{here}; CPU jobs priced at the measured speed (`--calibrate` measures this machine's)")
    lines += [f"CPU jobs priced x {factor:.2f} ({why})" for factor, why in factors]
    return lines


def totals_lines(plan: Plan) -> list[str]:
    """The plan's headline: jobs, GPU-/CPU-hours, disk, wall time, critical path, runtime rule."""
    totals = plan.totals()
    slots = f"{plan.gpus} GPU(s) and {plan.cores} CPU job slots"
    if totals["wall_s"] is not None:
        wall = f"wall time: {duration(totals['wall_s'])} on {slots}; critical path {duration(totals['critical_path_s'])}"
    else:
        wall = (f"wall time: unknown ({totals['unmeasured']} jobs unmeasured); of the priced jobs "
                f"{duration(totals['priced_wall_s'])} on {slots}, critical path {duration(totals['priced_critical_path_s'])}")
    lines = [f"jobs: {totals['jobs']} ({totals['unmeasured']} unmeasured, {totals['extrapolated']} extrapolated)",
             *_wrapped([f"GPU-hours: {_hours(totals['gpu_hours'], totals['gpu_unmeasured'], totals['priced_gpu_hours'])}",
                        f"CPU-hours: {_hours(totals['cpu_hours'], totals['cpu_unmeasured'], totals['priced_cpu_hours'])}",
                        f"disk: {size(totals['disk_bytes'])}"
                        + (f" (+{totals['disk_unknown']} jobs' unknown)" if totals["disk_unknown"] else "")]),
             wall, *textwrap.wrap(" -> ".join(plan.critical_path), WIDTH, initial_indent="  ", subsequent_indent="    ")]
    if totals["longest_data_job_s"] is not None:
        lines.append(f"longest data job: {duration(totals['longest_data_job_s'])} from start to end")
    lines.append(f"SLURM runtime where the params set none: {MARGIN} x the estimate (a CPU job's x {SLOWER_NODE:g} more: "
                 f"a node {SLOWER_NODE:g}x slower), at least {MIN_RUNTIME} min; a retry asks for its attempt's multiple")
    if totals["requeued"]:
        lines.append(f"requeued jobs: {totals['requeued']} (above their SLURM limit; see the notes)")
    return lines


def table(plan: Plan, per_job: bool = False) -> str:
    """The plan's lines: a row per rule (per job with `per_job`: its whole name, without the n and all
    columns), then the totals, then each estimate's source once (the rows refer to them by number)."""
    groups: dict[str, list[PlannedJob]] = defaultdict(list)
    for planned in plan.jobs:
        groups[planned.job.name if per_job else planned.job.rule].append(planned)
    numbers = _sources(plan)
    name_width = max(3, *map(len, groups)) + 1 if per_job else 26
    counts = lambda n: "" if per_job else f" {n:>4}"  # noqa: E731
    totals = lambda text: "" if per_job else f" {text:>10}"  # noqa: E731
    header = f"{'job' if per_job else 'rule':<{name_width}}{counts('n')} {'work per job':<46} {'device':<6} " \
             f"{'cpus':>4} {'per job':>10}{totals('all')} {'disk':>9} {'SLURM min':>9}  source"
    lines = [f"plan of {plan.params_path}", header, "-" * len(header)]
    for name, group in groups.items():
        first = group[0]
        seconds = [p.estimate.seconds for p in group]
        known = None if any(s is None for s in seconds) else sum(seconds)
        per = duration(max(p.wall_s for p in group)) if known is not None else "unmeasured"
        disk = None if any(p.estimate.disk_bytes is None for p in group) else sum(p.estimate.disk_bytes for p in group)
        runtimes = sorted({p.runtime for p in group}, key=lambda r: r or 0)
        runtime = "local" if first.job.family is None else (
            "/".join(str(r) if r else "-" for r in runtimes) if len(runtimes) <= 2
            else f"{runtimes[0] or '-'}-{runtimes[-1] or '-'}")
        cpus = sorted({p.cpus for p in group})
        cpus_text = str(cpus[0]) if len(cpus) == 1 else f"{cpus[0]}-{cpus[-1]}"
        lines.append(f"{name:<{name_width}}{counts(len(group))} {_work(first)[:46]:<46} {first.device[:6]:<6} "
                     f"{cpus_text:>4} {per:>10}{totals(duration(known))} "
                     f"{size(disk) if first.work.kind in ('generate', 'train') else '':>9} {runtime[:9]:>9}  "
                     f"{_source_marks(group, numbers)}"[:WIDTH])
        for note in dict.fromkeys(p.note for p in group if p.note):
            lines.append(f"{'':<{name_width}}   ! {note}"[:WIDTH])
    lines += ["", *totals_lines(plan), *_machines(plan), "", "sources (per job: tprepro plan --jobs, or --json):"]
    lines += [line for source, number in numbers.items()
              for line in textwrap.wrap(f"[{number}] {source}", WIDTH, initial_indent="  ", subsequent_indent="      ")]
    lines += [f"measurements: {path}" for path in plan.measurements] or ["measurements: none found"]
    return "\n".join(lines)


def as_json(plan: Plan) -> dict:
    return {
        "params": plan.params_path, "device": plan.device, "gpus": plan.gpus, "cores": plan.cores,
        "totals": plan.totals(), "critical_path": plan.critical_path, "measurements": plan.measurements,
        "runtime_rule": {"margin": MARGIN, "slower_node": SLOWER_NODE, "min_minutes": MIN_RUNTIME},
        "cpu_machines": plan.cpu_machines, "machine": plan.machine.as_record() if plan.machine else None,
        "calibration": plan.calibration.as_record() if plan.calibration else None,
        "jobs": [{"rule": p.job.rule, "stage": p.job.stage, "item": p.job.values, "outputs": list(p.job.outputs),
                  "family": p.job.family, "work": {"kind": p.work.kind, "items": p.work.items, "unit": p.work.unit,
                                                   "preset": p.work.preset, "steps": p.work.steps,
                                                   "batch_size": p.work.batch_size, "module": p.work.module,
                                                   "split": p.work.split},
                  "device": p.device, "seconds": p.estimate.seconds, "status": p.estimate.status,
                  "source": p.estimate.source, "disk_bytes": p.estimate.disk_bytes, "runtime_min": p.runtime,
                  "runtime_source": p.runtime_source, "segments": p.segments, "note": p.note, "cpus": p.cpus,
                  "wall_s": p.wall_s, "cpu_factor": p.cpu_factor}
                 for p in plan.jobs],
    }
