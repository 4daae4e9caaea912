"""Cost of verifying shards when a dataset is opened (sha256 of every shard + parquet footer).

    python -m benchmarks.shard_verification --data data/mathematics --repeats 5

Opens every dataset directory under --data (each (split, module) of a finished run) with
and without verification, prints a table per split and in all, and writes it as JSON to
--out (atomically). The first pass is repeated, so the numbers are for files in the page
cache (the usual case right after the data stage); a cold read adds the disk's read time.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from tprepro.data.shards import MANIFEST, open_dataset

from benchmarks.kit.report import stamp, write_report


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/mathematics", type=Path, help="folder of <split>/<module> datasets")
    parser.add_argument("--repeats", default=5, type=int)
    parser.add_argument("--out", default="results/benchmarks/shard_verification.json")
    return parser.parse_args()


def best_seconds(directories: list[Path], verify: bool, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for directory in directories:
            open_dataset(directory, verify=verify)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(label: str, directories: list[Path], repeats: int) -> dict:
    files = [p for d in directories for p in d.glob("part-*.parquet")]
    size = sum(p.stat().st_size for p in files)
    verified = best_seconds(directories, True, repeats)
    unverified = best_seconds(directories, False, repeats)
    return {"split": label, "datasets": len(directories), "shards": len(files), "mb": size / 1e6,
            "verify_s": verified, "no_verify_s": unverified, "extra_s": verified - unverified,
            "mb_per_s": size / 1e6 / verified if verified else float("inf")}


def main() -> None:
    args = parse_args()
    directories = sorted(p.parent for p in args.data.glob(f"*/*/{MANIFEST}"))
    if not directories:
        raise SystemExit(f"{args.data}: no datasets (<split>/<module>/{MANIFEST}); run the data stage first")
    rows = [measure(split, [d for d in directories if d.parent.name == split], args.repeats)
            for split in sorted({d.parent.name for d in directories})]
    rows.append(measure("all", directories, args.repeats))
    print(f"{'split':<14}{'datasets':>9}{'shards':>8}{'MB':>9}{'verify s':>10}{'no-verify s':>13}"
          f"{'extra s':>9}{'MB/s':>9}")
    for r in rows:
        print(f"{r['split']:<14}{r['datasets']:>9}{r['shards']:>8}{r['mb']:>9.3f}{r['verify_s']:>10.4f}"
              f"{r['no_verify_s']:>13.4f}{r['extra_s']:>9.4f}{r['mb_per_s']:>9.1f}")
    result = {**stamp(), "data": str(args.data), "repeats": args.repeats, "machine": platform.platform(),
              "python": platform.python_version(), "rows": rows}
    write_report(args.out, result)
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
