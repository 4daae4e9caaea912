"""The report stage's CPU seconds at growing sizes, fitted as fixed + rate x outputs shown, into the `report`
entry of results/benchmarks/stages/<kind>.json (the format is tprepro.plan.speeds's): the plan prices it as a
fixed job at the largest size measured.

It runs the real `tprepro report` through the timing wrapper on a finished run's folder, its params'
seeds multiplied `--copies` times (every run's interpretation folder linked under each new seed), so the
page shows that many times the per-run figures:

    python -m benchmarks.report_rate --run-dir <a finished run's project folder> --copies 1 4 \\
        --commit "$(git rev-parse --short HEAD)"
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path

import yaml

from tprepro.experiments.html_report.cli import CAPTIONS, REPORTED
from tprepro.experiments.html_report.stages import reported_outputs
from tprepro.params import load_params
from tprepro.plan.speeds import update_stage_rate

from benchmarks.kit.fit import fit  # the same least squares as the data jobs'
from benchmarks.kit.measure_jobs import measurement_arguments, timed_job

SEEDED = {"grid": ("mathematics/interpret",), "two_variable": ("two_variable/interpret",)}  # params section: run folders


def replicate(run_dir: Path, target: Path, copies: int) -> Path:
    """`target`: links to `run_dir`'s reported folders, params.yaml with each seed list `copies` times as long
    and each run's interpretation folder linked under every new seed; its params file."""
    params = yaml.safe_load((run_dir / "params.yaml").read_text())
    for folder in REPORTED:
        if folder not in sum(SEEDED.values(), ()):
            (target / folder).parent.mkdir(parents=True, exist_ok=True)
            os.symlink((run_dir / folder).resolve(), target / folder)
    for section, folders in SEEDED.items():
        seeds = params[section]["seeds"]
        for folder in folders:
            (target / folder).mkdir(parents=True)
            for run in (run_dir / folder).iterdir():
                stem, seed = run.name.rsplit("-s", 1)
                for copy in range(copies):
                    os.symlink(run.resolve(), target / folder / f"{stem}-s{int(seed) + copy * max(seeds)}")
        params[section]["seeds"] = [seed + copy * max(seeds) for copy in range(copies) for seed in seeds]
    (target / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return target / "params.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, required=True, help="a finished run's project folder")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4])
    measurement_arguments(parser)
    args = parser.parse_args()
    if len(set(args.copies)) < 2:
        parser.error("--copies: two or more sizes")
    captions = Path(__file__).resolve().parents[1] / CAPTIONS
    points = []
    print(f"{'outputs shown':>14} {'CPU s':>8}")
    for copies in args.copies:
        with tempfile.TemporaryDirectory(prefix="report-rate-") as scratch:
            params = replicate(args.run_dir, Path(scratch), copies)
            shown = len(reported_outputs(load_params(str(params)), captions, REPORTED))
            seconds = timed_job(["report", "--params", str(params), "--captions", str(captions), "--out",
                                 "report.html"], Path(scratch) / "times.jsonl", args.tprepro, cwd=Path(scratch))
        points.append((shown, seconds))
        print(f"{shown:>14,} {seconds:>8.2f}", flush=True)
    line = fit(points)
    print(f"fixed {line.fixed_s:.2f} s + {line.seconds_per_problem:.3f} s per output shown")
    # The plan prices the report as a fixed job: its seconds at the largest size measured, which covers
    # configurations showing up to that many outputs (the fit says how it grows past them).
    out = update_stage_rate(args.kind, "report", {
        "fixed_s": round(max(seconds for _, seconds in points), 3), "jobs": len(points),
        "fit": {"problems": [x for x, _ in points], "cpu_s": [round(y, 3) for _, y in points],
                "seconds_per_output": round(line.seconds_per_problem, 4), "commit": args.commit,
                "date": datetime.date.today().isoformat(), "by": "benchmarks/report_rate.py"}}, root=args.root)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
