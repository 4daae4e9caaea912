"""Each stage's job seconds in a real pipeline run, for `tprepro plan`: results/benchmarks/stages/<kind>.json.

Run the pipeline with benchmarks/timed_tprepro.sh as its `tprepro` (it records each job's wall and CPU
seconds), then:

    python -m benchmarks.stage_rates --params params.yaml --times jobs.jsonl --run-dir <the run's folder> \\
        --commit <the run's commit> --source "snakemake --cores 2 of params.yaml, 2026-11-27"

A job's seconds are its CPU seconds (user + system, its children included): what it takes on a core of
its own, which a run with as many cores as jobs gives it, and what other work on the machine changes
least. Per stage: jobs of fixed work, their median; jobs of counted work (Work.unit: problems made or
read, samples trained, problems decoded; per preset where a model runs, per Mathematics module where
one is generated), a fixed part plus seconds per item. A training job's trainer records the seconds
of its training loop (train_metrics.json in its model folder): that is its per-sample part, and the
rest of the job (imports, opening the data, building and exporting the model) its fixed part (the
stage's median). Other stages: fitted by least squares where the run had two or more sizes, else the
fixed part is the start-up every job pays (the median of the lightest fixed stage's jobs: imports) and
the rest is per item, so that a bigger configuration scales all of it (an overestimate by at most that
start-up per item count).
Generated data also gets its bytes per item on disk (the job's output folders under --run-dir).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
from pathlib import Path

from tprepro.train.files import TRAIN_METRICS

from benchmarks.kit.measure_jobs import folder_bytes


def loop_seconds(job, run_dir: Path) -> float | None:
    """The training loop's seconds of a training job, from the train_metrics.json among its outputs."""
    for out in job.outputs:
        if Path(out).name == TRAIN_METRICS and (run_dir / out).is_file():
            return float(json.loads((run_dir / out).read_text())["wall_seconds"])
    return None


def fit(points: list[tuple[int, float]], startup: float) -> tuple[float, float]:
    """(fixed seconds, seconds per item) through the (items, seconds) points."""
    sizes = {n for n, _ in points}
    if len(sizes) >= 2:
        mean_n = statistics.fmean(n for n, _ in points)
        mean_s = statistics.fmean(s for _, s in points)
        slope = sum((n - mean_n) * (s - mean_s) for n, s in points) / sum((n - mean_n) ** 2 for n, _ in points)
        fixed = mean_s - slope * mean_n
        if slope > 0 and fixed >= 0:
            return fixed, slope
    fixed = min(startup, min(s for _, s in points))
    return fixed, statistics.median((s - fixed) / n for n, s in points)


def timed_jobs(params: dict, times: Path) -> list[tuple]:
    """(job, its work, CPU seconds) of each successful job of `params` the timing wrapper recorded in `times`."""
    from tprepro.job_graph import jobs
    from tprepro.plan.work import work

    by_command = {tuple(shlex.split(job.command)): job for job in jobs(params)}
    measured = []
    for number, line in enumerate(times.read_text().splitlines(), 1):
        record = json.loads(line)
        job = by_command.get(tuple(["tprepro", *record["argv"]]))
        if job is None or record["status"] != 0:
            print(f"{times}:{number}: skipped ({'failed' if job else 'no job of the params runs'} "
                  f"{' '.join(record['argv'][:3])})", file=sys.stderr)
            continue
        measured.append((job, work(params, job.stage, job.values), record["cpu_s"]))
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", required=True)
    parser.add_argument("--times", required=True, help="timed_tprepro.sh's record (one JSON line per job)")
    parser.add_argument("--run-dir", required=True, help="the run's project folder (generated data sizes)")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--source", required=True, help="what ran: command, params, machine load")
    parser.add_argument("--device-kind", default="cpu")
    parser.add_argument("--root", type=Path, default=None,
                        help="measurements folder: writes <root>/stages/<device-kind>.json (default results/benchmarks)")
    parser.add_argument("--also", action="append", default=[], metavar="PARAMS=TIMES",
                        help="another run's records at other sizes (the rehearsal, say): its jobs that read data "
                             "(vocab) join their stage's fit, so it is fitted at two sizes; its other jobs are left "
                             "out (its presets may be narrowed; data jobs are fitted by benchmarks/data_rates.py)")
    args = parser.parse_args(argv)

    from tprepro.experiments import experiments
    from tprepro.params import load_params
    from tprepro.plan.machine import cpu_name
    from tprepro.plan.speeds import BENCHMARKS, write_stage_rates

    experiments()
    params = load_params(args.params)
    measured = timed_jobs(params, Path(args.times))
    for run in args.also:
        other_params, times = run.split("=", 1)
        measured += [(job, done, seconds) for job, done, seconds in timed_jobs(load_params(other_params), Path(times))
                     if done.kind == "read"]
    fixed_jobs: dict[str, list[float]] = {}
    for job, done, seconds in measured:
        if done.kind == "fixed":
            fixed_jobs.setdefault(job.stage, []).append(seconds)
    startup = min(statistics.median(seconds) for seconds in fixed_jobs.values())  # the lightest fixed stage's jobs
    stages: dict = {}
    for stage in dict.fromkeys(job.stage for job, _, _ in measured):
        mine = [(job, done, seconds) for job, done, seconds in measured if job.stage == stage]
        kind = mine[0][1].kind
        if kind == "fixed":
            stages[stage] = {"fixed_s": round(statistics.median(s for _, _, s in mine), 3), "jobs": len(mine)}
        elif kind == "train" and all(loop_seconds(job, Path(args.run_dir)) is not None for job, _, _ in mine):
            loops = [(job, done, seconds, loop_seconds(job, Path(args.run_dir))) for job, done, seconds in mine]
            entry = {"item": mine[0][1].unit, "jobs": len(mine), "per_preset": {},
                     "fixed_s": round(statistics.median(max(0.0, s - loop) for _, _, s, loop in loops), 3),
                     "split": "the trainer's loop seconds per sample; the rest of the job fixed"}
            for preset in dict.fromkeys(done.preset for _, done, _ in mine):
                entry["per_preset"][preset] = statistics.median(loop / d.items for _, d, _, loop in loops
                                                                if d.preset == preset)
            stages[stage] = entry
        elif kind in ("train", "decode"):
            entry = {"item": mine[0][1].unit, "jobs": len(mine), "per_preset": {}}
            for preset in dict.fromkeys(done.preset for _, done, _ in mine):
                fixed, per_item = fit([(d.items, s) for _, d, s in mine if d.preset == preset], startup)
                entry["per_preset"][preset] = per_item
                entry["fixed_s"] = round(min(entry.get("fixed_s", fixed), fixed), 3)
            stages[stage] = entry
        elif mine[0][1].module is not None:  # Mathematics data: generators differ in speed by module
            fixed, _ = fit([(d.items, s) for _, d, s in mine], startup)  # one fixed part, a rate per module
            per_module = {module: statistics.median(max(0.0, s - fixed) / d.items for _, d, s in mine if d.module == module)
                          for module in dict.fromkeys(done.module for _, done, _ in mine)}
            stages[stage] = {"item": mine[0][1].unit, "fixed_s": round(fixed, 3), "per_module": per_module,
                             "jobs": len(mine)}
        else:
            fixed, per_item = fit([(d.items, s) for _, d, s in mine], startup)
            stages[stage] = {"item": mine[0][1].unit, "fixed_s": round(fixed, 3), "seconds_per_item": per_item,
                             "jobs": len(mine)}
        if kind == "generate":
            sizes = [sum(folder_bytes(Path(args.run_dir) / out) for out in job.outputs) / done.items
                     for job, done, _ in mine]
            stages[stage]["bytes_per_item"] = round(statistics.median(sizes), 1)
    record = {"device_kind": args.device_kind, "device": cpu_name(),
              "commit": args.commit, "date": datetime.date.today().isoformat(), "source": args.source,
              "seconds": "CPU seconds (user + system) per job", "startup_s": round(startup, 3), "stages": stages}
    out = write_stage_rates(record, args.root or BENCHMARKS)
    print(f"{len(measured)} jobs, {len(stages)} stages -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
