"""The Mathematics evaluation's CPU seconds at growing sizes, fitted as one fixed part + a rate per preset x
problems decoded, into the `evaluate` entry of results/benchmarks/stages/<kind>.json (the format is
tprepro.plan.speeds's).

A pipeline run has one size per preset, so its evaluation jobs cannot tell start-up (imports, loading the
model and the data, logging to MLflow) from decoding: priced per problem, the start-up was scaled with the
problem count. This re-runs a finished run's real `tprepro evaluate` jobs through the timing wrapper with
the per-module training sample (`evaluate.train_sample`) set to each size, so each job decodes more
problems of the same models, on one thread (`--threads`): its CPU seconds are then a core's work, which
other jobs on the machine inflate least (torch's idle threads spin). With three or more sizes the largest
is first predicted from the others (the out-of-sample check docs/rehearsal.md reports), then all of them
are fitted. The training sample is drawn from each training split's first shard, so a run with large
shards lets it grow (docs/rehearsal.md: 20,000-row shards of the tiny grid's modules):

    python -m benchmarks.evaluate_rate --run-dir <a finished run of params.yaml> --params <its params file> \\
        --train-sample 300 1500 6000 20000 --commit "$(git rev-parse --short HEAD)"
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

from tprepro.experiments import experiments
from tprepro.params import EXTENDS, load_params
from tprepro.job_graph import jobs
from tprepro.plan.speeds import update_stage_rate
from tprepro.plan.work import work

from benchmarks.kit.measure_jobs import measurement_arguments, timed_job

STAGE = "evaluate"


def sized_params(params: Path, train_sample: int, folder: Path) -> Path:
    """A params file that is `params` with evaluate.train_sample = `train_sample`."""
    path = folder / f"train_sample-{train_sample}.yaml"
    path.write_text(f"{EXTENDS}: {params.resolve()}\nevaluate:\n  train_sample: {train_sample}\n")
    return path


def evaluation(command: str, out: Path) -> list[str]:
    """The arguments of a planned evaluation job's `command`, its table written to `out` instead."""
    argv = shlex.split(command)[1:]  # without "tprepro"
    argv[argv.index("--out") + 1] = str(out)
    return argv


def fit(points: list[tuple[str, int, float]]) -> tuple[float, dict[str, float]]:
    """Least squares of (preset, problems, CPU seconds): one fixed part shared by every preset (the job's
    start-up does not depend on the model's size at these sizes), a rate per preset."""
    presets = sorted({preset for preset, _, _ in points})
    design = np.array([[1.0] + [float(n) if preset == p else 0.0 for p in presets] for preset, n, _ in points])
    solution, *_ = np.linalg.lstsq(design, np.array([s for _, _, s in points]), rcond=None)
    return max(float(solution[0]), 0.0), {p: max(float(rate), 0.0) for p, rate in zip(presets, solution[1:])}


def predicted(fixed: float, rates: dict[str, float], preset: str, problems: int) -> float:
    return fixed + rates[preset] * problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, required=True, help="a finished pipeline run (its models and data)")
    parser.add_argument("--params", type=Path, required=True, help="that run's params file")
    parser.add_argument("--train-sample", type=int, nargs="+", default=[300, 1500, 6000, 20000])
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each evaluation job")
    measurement_arguments(parser)
    args = parser.parse_args()
    if len(set(args.train_sample)) < 2:
        parser.error("--train-sample: two or more sizes")
    experiments()
    points: list[tuple[str, int, float]] = []
    print(f"{'preset':24} {'train_sample':>12} {'problems':>9} {'CPU s':>8}")
    with tempfile.TemporaryDirectory(prefix="evaluate-rate-") as scratch:
        for size in sorted(set(args.train_sample)):
            params_path = sized_params(args.params, size, Path(scratch))
            params = load_params(str(params_path))
            for job in (j for j in jobs(params) if j.stage == STAGE):
                done = work(params, STAGE, job.values)
                seconds = timed_job(evaluation(job.command, Path(scratch) / "eval.csv"), Path(scratch) / "times.jsonl",
                                    args.tprepro, cwd=args.run_dir, TPREPRO_PARAMS=str(params_path),
                                    OMP_NUM_THREADS=str(args.threads))
                points.append((done.preset, done.items, seconds))
                print(f"{done.preset:24} {size:>12} {done.items:>9,} {seconds:>8.2f}", flush=True)
    largest = max(n for _, n, _ in points)
    smaller = [p for p in points if p[1] < largest]
    check = []
    if len({n for _, n, _ in smaller}) >= 2:
        fixed, rates = fit(smaller)
        check = [{"preset": preset, "problems": n, "cpu_s": round(s, 3),
                  "predicted_s": round(predicted(fixed, rates, preset, n), 3)} for preset, n, s in points if n == largest]
        for row in check:
            print(f"out of sample: {row['preset']} at {row['problems']:,} problems: predicted {row['predicted_s']:.1f} s, "
                  f"measured {row['cpu_s']:.1f} s ({row['predicted_s'] / row['cpu_s']:.2f})")
    fixed, rates = fit(points)
    print(f"fixed {fixed:.2f} s + per problem: " + ", ".join(f"{p} {r * 1e3:.3f} ms" for p, r in rates.items()))
    out = update_stage_rate(args.kind, STAGE, {
        "item": "problems decoded", "fixed_s": round(fixed, 3), "per_preset": rates, "jobs": len(points),
        "fit": {"presets": [p for p, _, _ in points], "problems": [n for _, n, _ in points],
                "cpu_s": [round(s, 3) for _, _, s in points],
                "out_of_sample": check, "commit": args.commit, "date": datetime.date.today().isoformat(),
                "threads": args.threads, "by": "benchmarks/evaluate_rate.py"}}, root=args.root)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
