"""The vocabulary stage's CPU seconds at growing sizes, fitted as fixed + rate x problems read, into the
`vocab` entry of results/benchmarks/stages/<kind>.json (the format is tprepro.plan.speeds's).

At the sizes a pipeline run has (18,000 problems in params.yaml, 168,000 in the rehearsal) the job is
all start-up (imports), so its rate cannot be read off them. This runs the real `tprepro vocab` through
the timing wrapper over a finished run's training splits with every shard listed `--copies` times (links
to the same files, manifests written as the data stage writes them), so it reads that many times the rows:

    python -m benchmarks.vocab_rate --data /tmp/rehearsal/data/mathematics --params workflow/configs/rehearsal.yaml \\
        --copies 1 20 100 --commit "$(git rev-parse --short HEAD)"
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

from tprepro.experiments import experiments
from tprepro.experiments.mathematics.modules import TRAIN_SPLITS
from tprepro.params import load_params
from tprepro.plan.calibrate import replicate as replicate_dataset
from tprepro.plan.speeds import update_stage_rate

from benchmarks.kit.fit import fit  # the same least squares as the data jobs'
from benchmarks.kit.measure_jobs import measurement_arguments, timed_job


def replicate(source: Path, target: Path, copies: int) -> int:
    """`target`: each dataset of `source`'s training splits with its shards listed `copies` times; its rows."""
    return sum(replicate_dataset(dataset_dir, target / split / dataset_dir.name, copies)
               for split in TRAIN_SPLITS for dataset_dir in sorted((source / split).iterdir()))


def timed_vocab(params: str, train: Path, times: Path, tprepro: str) -> float:
    """CPU seconds of one `tprepro vocab` over the split folders under `train`."""
    return timed_job(["vocab", "--params", params, "--train", *(str(train / split) for split in TRAIN_SPLITS),
                      "--out", str(train / "vocab.json")], times, tprepro)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a finished run's data/mathematics folder")
    parser.add_argument("--params", required=True, help="that run's params file")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 20, 100])
    measurement_arguments(parser)
    args = parser.parse_args()
    if len(set(args.copies)) < 2:
        parser.error("--copies: two or more sizes")
    experiments()
    load_params(args.params)
    points = []
    print(f"{'problems read':>14} {'CPU s':>8}")
    for copies in args.copies:
        with tempfile.TemporaryDirectory(prefix="vocab-rate-") as scratch:
            rows = replicate(args.data, Path(scratch), copies)
            seconds = timed_vocab(args.params, Path(scratch), Path(scratch) / "times.jsonl", args.tprepro)
        points.append((rows, seconds))
        print(f"{rows:>14,} {seconds:>8.2f}", flush=True)
    line = fit(points)
    print(f"fixed {line.fixed_s:.2f} s + {line.seconds_per_problem * 1e6:.3f} us per problem read")
    out = update_stage_rate(args.kind, "vocab", {
        "item": "problems read", "fixed_s": round(line.fixed_s, 3), "seconds_per_item": line.seconds_per_problem,
        "jobs": len(points), "fit": {"problems": [x for x, _ in points], "cpu_s": [round(y, 3) for _, y in points],
                           "commit": args.commit, "date": datetime.date.today().isoformat(),
                           "by": "benchmarks/vocab_rate.py"}}, root=args.root)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
