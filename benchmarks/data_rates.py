"""Each Mathematics data job's generation cost, fitted per (split, module) as fixed + rate x problems, for
`tprepro plan`: results/benchmarks/data/<kind>.json (format owned by tprepro.plan.speeds).

Run it in the generation interpreter (it samples with mathematics_dataset), on a quiet core:

    PYTHONHASHSEED=0 .venv-gen/bin/python benchmarks/data_rates.py --params workflow/configs/paper.yaml \\
        --jobs /tmp/rehearsal-jobs.jsonl --commit "$(git rev-parse --short HEAD)"

For every (split, module) of the params file's grid it samples one shard of `--small` problems and one
of a size chosen to take about `--target` CPU seconds (at least 4x the small one), each with the stage's
own shard seeds, in this process, and fits the line through the two CPU-second counts: the module's fixed
part (building its sampler, first-draw caches) and its seconds per problem. Per-problem costs span more
than 1,000x across modules, so no module is priced from another's. `--jobs` (the timing wrapper's
records of a pipeline run, benchmarks/timed_tprepro.sh) adds what every data job pays on top (its
interpreters, imports, forkserver and shard writing: the median of each job's CPU seconds less its
module's fitted cost) and, per module, the run's CPU seconds beside this fit's prediction for its size.
Prints a table; writes the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.experiments import experiments
from tprepro.experiments.mathematics import generate
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, split_modules
from tprepro.params import load_params
from tprepro.plan.speeds import BENCHMARKS, DataRate, data_rates_path, read_data_rates, write_data_rates


def sample_cpu_seconds(split: str, module: str, seed: int, shard: int, problems: int) -> float:
    """CPU seconds of sampling one shard of `problems` problems of (split, module), as a data job does."""
    started = time.process_time()
    generate._generate_shard((split, module, seed, shard, problems, generate.errors_allowed(problems)))
    return time.process_time() - started


def fit(split: str, module: str, seed: int, small: int, target_s: float, largest: int) -> DataRate:
    """Two sizes, the line through them."""
    small_s = sample_cpu_seconds(split, module, seed, 0, small)
    large = int(min(largest, max(4 * small, target_s * small / max(small_s, 1e-6))))
    large_s = sample_cpu_seconds(split, module, seed, 1, large)
    rate = max((large_s - small_s) / (large - small), 0.0)
    return DataRate(fixed_s=max(small_s - rate * small, 0.0), seconds_per_problem=rate,
                    sizes=(small, large), cpu_s=(round(small_s, 4), round(large_s, 4)))


def job_records(path: Path) -> dict[str, float]:
    """{"split/module": CPU seconds} of the data jobs a timed pipeline run recorded."""
    jobs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        argv = record["argv"]
        if argv[:1] == ["data"] and record["status"] == 0:
            split, module = argv[argv.index("--split") + 1], argv[argv.index("--module") + 1]
            jobs[f"{split}/{module}"] = record["cpu_s"]
    return jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="workflow/configs/paper.yaml", help="whose grid and seed to measure")
    parser.add_argument("--jobs", type=Path, help="a timed pipeline run's job records (benchmarks/timed_tprepro.sh)")
    parser.add_argument("--jobs-params", help="the params file of that run (its problem counts); default --params")
    parser.add_argument("--small", type=int, default=20, help="problems in the small shard")
    parser.add_argument("--target", type=float, default=6.0, help="CPU seconds the large shard aims at")
    parser.add_argument("--largest", type=int, default=3000, help="at most this many problems in the large shard")
    parser.add_argument("--only", nargs="*", default=None, help="measure these modules only")
    parser.add_argument("--reuse", action="store_true",
                        help="sample nothing: take the fits from the existing file (to add --jobs to it)")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--kind", default="cpu", help="device kind the file is for")
    parser.add_argument("--root", type=Path, default=BENCHMARKS, help="measurements folder: writes <root>/data/<kind>.json")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != generate.HASH_SEED:
        raise SystemExit(f"run with PYTHONHASHSEED={generate.HASH_SEED} (the generator's workers run so)")
    experiments()
    params = load_params(args.params, models=False)
    grid, seed = params["grid"], params["data"]["seed"]
    rates, recorded = {}, job_records(args.jobs) if args.jobs else {}
    previous = read_data_rates(data_rates_path(args.kind, args.root)).jobs if args.reuse else None
    if previous is None:
        generate._import_package()
        sample_cpu_seconds(INTERPOLATE, "arithmetic__mixed", seed, 0, 50)  # warm up: first-draw imports
    print(f"{'split/module':58} {'sizes':>11} {'fixed s':>8} {'ms/problem':>11}")
    for split in [*TRAIN_SPLITS, INTERPOLATE, EXTRAPOLATE]:
        for module in split_modules(grid, split):
            if args.only and module not in args.only:
                continue
            if previous is not None:
                if f"{split}/{module}" in previous:
                    rates[f"{split}/{module}"] = previous[f"{split}/{module}"]
                continue
            try:
                rate = fit(split, module, seed, args.small, args.target, args.largest)
            except TpreproError as error:
                print(f"{split}/{module}: {error}", file=sys.stderr)
                continue
            rates[f"{split}/{module}"] = rate
            print(f"{split + '/' + module:58} {rate.sizes[0]:>5}/{rate.sizes[1]:<5} {rate.fixed_s:8.3f} "
                  f"{1000 * rate.seconds_per_problem:11.3f}", flush=True)
    run_data = load_params(args.jobs_params or args.params, models=False)["data"]
    recorded = {job: (cpu, run_data["train_per_module" if job.split("/")[0] in TRAIN_SPLITS else "test_per_module"])
                for job, cpu in recorded.items() if job in rates}
    overheads = [cpu - rates[job].seconds(count) for job, (cpu, count) in recorded.items()]
    job_fixed = statistics.median(overheads) if overheads else None
    if job_fixed is not None:
        print(f"\neach data job's own start-up and writing: {job_fixed:.2f} CPU s (median of {len(overheads)} jobs "
              f"of {args.jobs})")
    out = write_data_rates(
        rates, kind=args.kind, device=platform.processor() or platform.machine(), commit=args.commit,
        date=datetime.date.today().isoformat(), job_fixed_s=job_fixed,
        source=f"benchmarks/data_rates.py --params {args.params} (small {args.small}, target {args.target} s)",
        recorded=recorded, root=args.root)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
