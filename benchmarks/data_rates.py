"""Each Mathematics data job's CPU seconds, fitted per (split, module) as fixed + rate x problems from real
data jobs at two or more sizes, for `tprepro plan`: results/benchmarks/data/<kind>.json (the format is
tprepro.plan.speeds's).

A size is a run of every data job of a params file through benchmarks/timed_tprepro.sh (its JSON-lines
records: the CPU seconds of the job and every process it started, generator workers included). A
pipeline run gives one (the rehearsal: `snakemake` with workflow/configs/rehearsal.yaml and the timing
wrapper, docs/rehearsal.md); `--measure` runs the data jobs of a params file one at a time and records
another:

    python -m benchmarks.data_rates --measure /tmp/small.yaml --times /tmp/small-jobs.jsonl
    python -m benchmarks.data_rates --run /tmp/small.yaml=/tmp/small-jobs.jsonl \\
        --run workflow/configs/rehearsal.yaml=/tmp/rehearsal-jobs.jsonl --commit "$(git rev-parse --short HEAD)"

Per (split, module): least squares through its jobs' (problems, CPU seconds). Per-problem costs span more
than 1,000x across modules, so no module is priced from another's. Prints a table; writes the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from tprepro.experiments import experiments
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, split_modules
from tprepro.params import load_params
from tprepro.plan.machine import cpu_name
from tprepro.plan.speeds import write_data_rates

from benchmarks.kit.fit import fit
from benchmarks.kit.measure_jobs import measurement_arguments, timed_job


def grid_jobs(params: dict) -> list[tuple[str, str, int]]:
    """(split, module, problems) of every data job of `params`."""
    data = params["data"]
    return [(split, module, data["train_per_module"] if split in TRAIN_SPLITS else data["test_per_module"])
            for split in [*TRAIN_SPLITS, INTERPOLATE, EXTRAPOLATE] for module in split_modules(params["grid"], split)]


def measure(params_path: str, times: Path, tprepro: str) -> None:
    """Run every data job of `params_path` through the timing wrapper, one at a time, into a scratch folder."""
    jobs = grid_jobs(load_params(params_path, models=False))
    with tempfile.TemporaryDirectory(prefix="data-rates-") as scratch:
        for number, (split, module, _) in enumerate(jobs, start=1):
            out = Path(scratch) / split / module
            timed_job(["data", "--params", params_path, "--split", split, "--module", module, "--out", str(out),
                       "--processes", "1"], times, tprepro)
            shutil.rmtree(out)
            print(f"{number}/{len(jobs)} {split}/{module}", flush=True)


def recorded(params_path: str, times: Path) -> dict[str, tuple[int, float]]:
    """{"split/module": (problems, CPU seconds)} of a run's successful data jobs."""
    problems = {f"{split}/{module}": count for split, module, count in grid_jobs(load_params(params_path, models=False))}
    found = {}
    for line in times.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        argv = record["argv"]
        if argv[:1] == ["data"] and record["status"] == 0:
            job = f"{argv[argv.index('--split') + 1]}/{argv[argv.index('--module') + 1]}"
            if job in problems:
                found[job] = (problems[job], record["cpu_s"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", metavar="PARAMS", help="run PARAMS' data jobs one at a time, timed, into --times")
    parser.add_argument("--times", type=Path, help="with --measure: the JSON-lines file to append to")
    parser.add_argument("--run", action="append", default=[], metavar="PARAMS=TIMES",
                        help="a measured size: a params file and its data jobs' timing records (two or more)")
    measurement_arguments(parser, commit_required=False)  # writes <root>/data/<kind>.json
    args = parser.parse_args()
    experiments()
    if args.measure:
        if args.times is None:
            parser.error("--measure needs --times")
        measure(args.measure, args.times, args.tprepro)
        return 0
    if len(args.run) < 2 or args.commit is None:
        parser.error("a fit needs two or more --run PARAMS=TIMES and --commit")
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for run in args.run:
        params_path, times = run.split("=", 1)
        for job, point in recorded(params_path, Path(times)).items():
            points[job].append(point)
    rates = {job: fit(found) for job, found in points.items() if len({x for x, _ in found}) >= 2}
    print(f"{'split/module':58} {'problems':>13} {'CPU s':>15} {'fixed s':>8} {'ms/problem':>11}")
    for job, rate in sorted(rates.items()):
        print(f"{job:58} {'/'.join(map(str, rate.sizes)):>13} {'/'.join(f'{c:.1f}' for c in rate.cpu_s):>15} "
              f"{rate.fixed_s:8.2f} {1000 * rate.seconds_per_problem:11.3f}")
    missing = sorted(set(points) - set(rates))
    if missing:
        print(f"\nnot fitted (fewer than two sizes): {', '.join(missing)}")
    out = write_data_rates(rates, kind=args.kind, device=cpu_name(), commit=args.commit,
                           date=datetime.date.today().isoformat(),
                           source="real data jobs timed at " + ", ".join(run.split("=", 1)[0] for run in args.run),
                           root=args.root)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
