"""The bytes a Mathematics data job leaves on disk, per module family, for `tprepro plan`'s disk column: real
data jobs of every module of one split at two sizes (one shard each, in paper.yaml's row groups), fitted per
family by least squares as a shard's fixed bytes (parquet footer, manifest) + bytes per problem, into the
`disk` entry of results/benchmarks/data/<kind>.json (the format is tprepro.plan.speeds's).

    python -m benchmarks.data_bytes --commit "$(git rev-parse --short HEAD)"

The bytes of a problem are its question's and answer's, compressed: they differ by module (a composed
module's problems are longer), so each family is fitted over all of its modules. Prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tprepro.experiments import experiments
from tprepro.experiments.mathematics.modules import split_modules
from tprepro.params import EXTENDS, load_params
from tprepro.plan.speeds import update_data_disk

from benchmarks.kit.fit import fit  # the same least squares (a fixed part >= 0, a rate >= 0)
from benchmarks.kit.measure_jobs import folder_bytes

ROWS_PER_SHARD = 5_000  # paper.yaml's: every measured job is one shard


def family(module: str) -> str:
    """A module's family: its name's part before `__` (algebra, arithmetic, ..., probability)."""
    return module.split("__", 1)[0]


def measure(params: str, split: str, sizes: list[int], tprepro: str) -> list[tuple[str, int, int]]:
    """(module, problems, bytes) of each data job of `split`'s modules of `params` at each size."""
    import subprocess

    modules = split_modules(load_params(params, models=False)["grid"], split)
    found = []
    with tempfile.TemporaryDirectory(prefix="data-bytes-") as scratch:
        for problems in sizes:
            sized = Path(scratch) / f"{problems}.yaml"
            sized.write_text(f"{EXTENDS}: {Path(params).resolve()}\ndata: {{source: generate, seed: 1, train_per_module: "
                             f"{problems}, test_per_module: {problems}, rows_per_shard: {ROWS_PER_SHARD}}}\n")

            def job(module: str) -> tuple[str, int, int]:
                out = Path(scratch) / str(problems) / module
                subprocess.run([tprepro, "data", "--params", str(sized), "--split", split, "--module", module,
                                "--out", str(out), "--processes", "1"], check=True, capture_output=True)
                print(f"{split}/{module} at {problems:,}: {folder_bytes(out):,} bytes", flush=True)
                return module, problems, folder_bytes(out)

            with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
                found += list(pool.map(job, modules))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="workflow/configs/paper.yaml", help="whose modules of --split")
    parser.add_argument("--split", default="train-medium")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--commit", required=True)
    parser.add_argument("--kind", default="cpu", help="the data rates file the entry goes to")
    parser.add_argument("--tprepro", default=str(Path(sys.executable).with_name("tprepro")))
    parser.add_argument("--root", type=Path, default=None, help="measurements folder (results/benchmarks)")
    args = parser.parse_args()
    if len(set(args.sizes)) < 2:
        parser.error("--sizes: two or more")
    experiments()
    points = defaultdict(list)
    modules = defaultdict(set)
    for module, problems, size in measure(args.params, args.split, args.sizes, args.tprepro):
        points[family(module)].append((problems, size))
        modules[family(module)].add(module)
    print(f"\n{'family':12} {'modules':>7} {'shard bytes':>11} {'bytes/problem':>13}")
    per_family = {}
    for name, found in sorted(points.items()):
        line = fit(found)
        per_family[name] = {"shard_bytes": round(line.fixed_s, 1), "bytes_per_problem": round(line.seconds_per_problem, 2),
                            "modules": len(modules[name])}
        print(f"{name:12} {len(modules[name]):>7} {line.fixed_s:>11.0f} {line.seconds_per_problem:>13.2f}")
    out = update_data_disk(args.kind, {"per_family": per_family, "split": args.split, "sizes": args.sizes,
                                       "rows_per_shard": ROWS_PER_SHARD, "commit": args.commit,
                                       "date": datetime.date.today().isoformat(), "by": "benchmarks/data_bytes.py"},
                           **({"root": args.root} if args.root else {}))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
