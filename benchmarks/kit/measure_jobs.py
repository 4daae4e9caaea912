"""What the benchmarks that time real `tprepro` jobs share: the options naming the measurement they write
(tprepro.plan.speeds owns its format), one job run through the timing wrapper, and the bytes a job left."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tprepro.plan.speeds import BENCHMARKS

TIMED = Path(__file__).resolve().parents[1] / "timed_tprepro.sh"


def measurement_arguments(parser: argparse.ArgumentParser, commit_required: bool = True) -> None:
    """--commit, --kind, --tprepro and --root: what ran, on what, and where the measurement goes."""
    parser.add_argument("--commit", required=commit_required, help="the commit the jobs ran")
    parser.add_argument("--kind", default="cpu", help="device kind the measurement is for")
    parser.add_argument("--tprepro", default=str(Path(sys.executable).with_name("tprepro")), help="the real tprepro")
    parser.add_argument("--root", type=Path, default=BENCHMARKS, help="measurements folder (results/benchmarks)")


def timed_job(argv: list[str], times: Path, tprepro: str, cwd: Path | None = None, **env: str) -> float:
    """Run `tprepro <argv>` through benchmarks/timed_tprepro.sh, its record appended to `times`; its CPU
    seconds (the job's and every process it started)."""
    environment = {**os.environ, "TPREPRO_REAL": tprepro, "TPREPRO_JOB_TIMES": str(times), **env}
    subprocess.run(["bash", str(TIMED), *argv], cwd=cwd, env=environment, check=True, stdout=subprocess.DEVNULL)
    return json.loads(times.read_text(encoding="utf-8").splitlines()[-1])["cpu_s"]


def folder_bytes(path: Path) -> int:
    """The bytes of a job's output: a file's, or the sum of a folder's files."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size
