"""The calibrated plan against real data jobs on the machine at hand: for each of two sizes no fit used,
`tprepro plan`'s calibration (a reference run, tprepro.plan.calibrate) and then data jobs of modules no doc
singles out, each counted in CPU seconds with every process it started (tprepro.plan.cpu_seconds), beside
the plan's estimate of the same job uncalibrated and calibrated. A calibration is the machine's speed at
the time: on a shared machine it drifts with the load (recorded), so each size is calibrated just before.
A job's CPU seconds vary from run to run there too: --repeats runs each job that many times and compares the
plan with their median; --rounds pools that many reference runs into each calibration.

    python -m benchmarks.calibration_check --commit "$(git rev-parse --short HEAD)" --rounds 2 --repeats 2 \\
        --out results/benchmarks/calibration-check-cpu.json

Prints a markdown table; writes the JSON (machine, factors, every job).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tprepro.experiments import experiments
from tprepro.io import atomic_write_text
from tprepro.params import EXTENDS, load_params
from tprepro.plan.calibrate import calibrate
from tprepro.plan.cpu_seconds import counted
from tprepro.plan.plan import make_plan
from tprepro.plan.speeds import load_measurements

# One job of each of six module families whose modules no page of docs/ names (checked by its test).
JOBS = (("train-hard", "algebra__linear_2d_composed"), ("train-medium", "arithmetic__simplify_surd"),
        ("interpolate", "calculus__differentiate_composed"), ("train-hard", "comparison__sort_composed"),
        ("train-easy", "polynomials__add"), ("train-hard", "numbers__div_remainder_composed"))
SIZES = (2_000, 8_000)  # the fits were measured at 200 and 1,000 problems
ROWS_PER_SHARD = 5_000  # paper.yaml's


def sized_params(base: str, folder: Path, problems: int) -> Path:
    """`base` with the checked modules and `problems` per data job, in paper.yaml's shards."""
    modules = sorted({module for _, module in JOBS})
    path = folder / f"check-{problems}.yaml"
    path.write_text(f"{EXTENDS}: {Path(base).resolve()}\ngrid: {{modules: [{', '.join(modules)}]}}\n"
                    f"interpret: {{module: {modules[0]}}}\ndata: {{source: generate, seed: 1, train_per_module: "
                    f"{problems}, test_per_module: {problems}, rows_per_shard: {ROWS_PER_SHARD}}}\n")
    return path


def measured_jobs(path: Path, out: Path, problems: int, repeats: int, tprepro: str) -> dict[tuple[str, str], list]:
    """{(split, module): CPU seconds of each of `repeats` runs} of every checked job at `problems`, two at a time,
    each round of the six after the last."""
    def measure(job: tuple[str, str], round_: int) -> float:
        split, module = job
        return counted([tprepro, "data", "--params", str(path), "--split", split, "--module", module,
                        "--out", str(out / f"round-{round_}" / split / module), "--processes", "1"])["cpu_s"]

    found: dict[tuple[str, str], list] = {job: [] for job in JOBS}
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for round_ in range(repeats):
            for job, seconds in zip(JOBS, pool.map(measure, JOBS, [round_] * len(JOBS))):
                found[job].append(seconds)
                print(f"  {job[0]}/{job[1]} at {problems:,}, run {round_ + 1}: {seconds:.1f} CPU-s", flush=True)
    return found


def judged(rows: list[dict]) -> dict:
    """How the calibrated estimates fared: within 25% of the measured CPU seconds, their median and range."""
    ratios = [row["calibrated_over_measured"] for row in rows]
    return {"within_25_percent": sum(0.75 <= r <= 1.25 for r in ratios), "checked": len(ratios),
            "median": statistics.median(ratios), "range": [min(ratios), max(ratios)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml", help="the base params file")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--tprepro", default=str(Path(sys.executable).with_name("tprepro")))
    parser.add_argument("--rounds", type=int, default=1, help="reference runs per calibration (tprepro plan's "
                                                               "--calibration-rounds)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each checked job, compared by their median")
    args = parser.parse_args()
    experiments()
    measurements = load_measurements()
    rows, calibrations = [], []
    with tempfile.TemporaryDirectory(prefix="calibration-check-") as scratch:
        for problems in SIZES:
            print(f"calibration before the jobs of {problems:,} problems:", flush=True)
            calibration = calibrate(args.params, measurements, tprepro=args.tprepro, rounds=args.rounds,
                                    progress=lambda line: print(line, flush=True))
            print(calibration.describe(), flush=True)
            calibrations.append(calibration)
            path = sized_params(args.params, Path(scratch), problems)
            planned = {(p.work.split, p.work.module): p
                       for p in make_plan(load_params(path), str(path), measurements=measurements,
                                          calibration=calibration).jobs if p.job.stage == "data"}
            runs = measured_jobs(path, Path(scratch) / str(problems), problems, args.repeats, args.tprepro)
            for (split, module), seconds in runs.items():
                job = planned[split, module]
                cpu, calibrated = statistics.median(seconds), job.estimate.seconds
                rows.append({"job": f"{split}/{module}", "problems": problems, "cpu_s": cpu, "runs_cpu_s": seconds,
                             "factor": job.cpu_factor, "factor_from": job.cpu_factor_from,
                             "plan_s": round(calibrated / job.cpu_factor, 3),
                             "calibrated_s": round(calibrated, 3),
                             "calibrated_over_measured": round(calibrated / cpu, 3),
                             "load_average": os.getloadavg()[0]})  # after the size's runs
    verdict = judged(rows)
    print("\n| job | problems | CPU s (runs) | plan (uncalibrated) | factor | calibrated | calibrated / measured |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        runs = ", ".join(f"{s:.1f}" for s in row["runs_cpu_s"])
        print(f"| `{row['job']}` | {row['problems']:,} | {row['cpu_s']:.1f} ({runs}) | {row['plan_s']:.1f} | "
              f"x{row['factor']:.2f} | {row['calibrated_s']:.1f} | {row['calibrated_over_measured']:.2f} |")
    print(f"\n{verdict['within_25_percent']} of {verdict['checked']} within 25%; median {verdict['median']:.2f}, "
          f"range {verdict['range'][0]:.2f}-{verdict['range'][1]:.2f}")
    record = {"schema": "tprepro.calibration_check/2", "commit": args.commit,
              "date": datetime.date.today().isoformat(), "machine": calibrations[0].machine.as_record(),
              "rounds": args.rounds, "repeats": args.repeats, "calibrations": [c.as_record() for c in calibrations],
              "jobs": rows, **verdict}
    atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
