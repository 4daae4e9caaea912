"""A note on each training priced cheaper per step than a smaller model's of its stage and device, with
what the two measurements say: a reader should not have to guess whether it is an error."""

from __future__ import annotations

import dataclasses

from tprepro.plan.estimate import parameter_count
from tprepro.plan.speeds import Measurements


def with_cheaper_notes(planned: list, measurements: Measurements) -> list:
    """`planned` with a note on each training priced cheaper per step than a smaller model's of its stage and
    device: what the two measurements say (where both are benchmarks, their MFU and padding)."""
    found: dict[tuple, dict] = {}
    for p in planned:
        if p.work.kind == "train" and p.estimate.seconds is not None:
            found.setdefault((p.job.stage, p.device), {}).setdefault(p.work.preset, p)
    notes = {}
    for (stage, device), priced in found.items():
        step = {preset: p.estimate.seconds / p.work.steps for preset, p in priced.items()}
        for preset, mine in priced.items():
            smaller = [other for other in priced if parameter_count(other) < parameter_count(preset)
                       and step[other] > step[preset]]
            if smaller:
                other = max(smaller, key=step.get)
                notes[stage, device, preset] = _cheaper_note(mine, priced[other], measurements)
    if not notes:
        return planned
    return [dataclasses.replace(p, note="; ".join(filter(None, [p.note, notes[p.job.stage, p.device, p.work.preset]])))
            if (p.job.stage, p.device, p.work.preset) in notes else p for p in planned]


def _cheaper_note(mine, smaller, measurements: Measurements) -> str:
    """Why `mine` is priced cheaper per step than the smaller `smaller`: the measurements' own figures."""
    preset, other = mine.work.preset, smaller.work.preset
    ratio = (mine.estimate.seconds / mine.work.steps) / (smaller.estimate.seconds / smaller.work.steps)
    note = f"{ratio:.2f}x {other}'s time a step at {parameter_count(preset) / parameter_count(other):.2f}x its size"
    benchmarks = [measurements.throughput.get((p.device, p.work.preset)) for p in (mine, smaller)]
    if all(p.estimate.source.startswith("benchmark of") for p in (mine, smaller)) and all(
            b is not None and b.mfu_padded is not None for b in benchmarks):
        a, b = benchmarks
        return (f"{note}: benchmarked at {a.mfu_padded:.1%} vs {b.mfu_padded:.1%} of peak "
                f"({a.flops_per_sample / b.flops_per_sample:.2f}x FLOPs, padding {a.padding_share:.0%} vs "
                f"{b.padding_share:.0%})")
    return f"{note}: as measured ({mine.estimate.source.split(' (')[0]})"
