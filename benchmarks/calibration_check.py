"""The calibrated plan against real data jobs on the machine at hand: for each of two sizes no fit used,
`tprepro plan`'s calibration (a reference run, tprepro.plan.calibrate) and then data jobs of modules no doc
singles out, each counted in CPU seconds with every process it started (tprepro.plan.cpu_seconds), beside
the plan's estimate of the same job uncalibrated and calibrated. A calibration is the machine's speed at
the time: on a shared machine it drifts with the load (recorded), so each size is calibrated just before.

    python -m benchmarks.calibration_check --commit "$(git rev-parse --short HEAD)" \\
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml", help="the base params file")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--tprepro", default=str(Path(sys.executable).with_name("tprepro")))
    args = parser.parse_args()
    experiments()
    measurements = load_measurements()
    rows, calibrations = [], []
    with tempfile.TemporaryDirectory(prefix="calibration-check-") as scratch:
        for problems in SIZES:
            print(f"calibration before the jobs of {problems:,} problems:", flush=True)
            calibration = calibrate(args.params, measurements, tprepro=args.tprepro,
                                    progress=lambda line: print(line, flush=True))
            print(calibration.describe(), flush=True)
            calibrations.append(calibration)
            path = sized_params(args.params, Path(scratch), problems)
            planned = {(p.work.split, p.work.module): p
                       for p in make_plan(load_params(path), str(path), measurements=measurements,
                                          calibration=calibration).jobs if p.job.stage == "data"}

            def measure(job: tuple[str, str]) -> dict:
                split, module = job
                out = Path(scratch) / str(problems) / split / module
                cpu = counted([args.tprepro, "data", "--params", str(path), "--split", split, "--module", module,
                               "--out", str(out), "--processes", "1"])["cpu_s"]
                calibrated = planned[job].estimate.seconds
                row = {"job": f"{split}/{module}", "problems": problems, "cpu_s": cpu, "factor": calibration.factor,
                       "plan_s": round(calibrated / calibration.factor, 3), "calibrated_s": round(calibrated, 3),
                       "calibrated_over_measured": round(calibrated / cpu, 3), "load_average": os.getloadavg()[0]}
                print(f"  {row['job']} at {problems:,}: {cpu:.1f} CPU-s, plan {row['plan_s']:.1f}, "
                      f"calibrated {calibrated:.1f} ({row['calibrated_over_measured']:.2f})", flush=True)
                return row

            with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
                rows += list(pool.map(measure, JOBS))
    ratios = [row["calibrated_over_measured"] for row in rows]
    within = sum(0.75 <= r <= 1.25 for r in ratios)
    print("\n| job | problems | CPU s | plan (uncalibrated) | factor | calibrated | calibrated / measured |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| `{row['job']}` | {row['problems']:,} | {row['cpu_s']:.1f} | {row['plan_s']:.1f} | "
              f"x{row['factor']:.2f} | {row['calibrated_s']:.1f} | {row['calibrated_over_measured']:.2f} |")
    print(f"\n{within} of {len(rows)} within 25%; median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}")
    record = {"schema": "tprepro.calibration_check/1", "commit": args.commit,
              "date": datetime.date.today().isoformat(), "machine": calibrations[0].machine.as_record(),
              "calibrations": [c.as_record() for c in calibrations], "jobs": rows, "within_25_percent": within}
    atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
