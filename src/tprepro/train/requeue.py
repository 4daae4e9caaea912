"""Requeue only preemption: a training job that failed for another reason is not run again.

Snakemake's `retries:` re-runs a failed job whatever its exit status. The train
rules keep `retries:` for preemption (exit status REQUEUE_EXIT, on SLURM a new
allocation), and this guard turns every other retry into an immediate failure:

- Snakemake's `onstart` exports a fresh id for its invocation (INVOCATION_ENV).
- A training command that fails with any status but 0 and REQUEUE_EXIT records
  `{invocation, status, error}` in `<checkpoints>/last_failure.json`.
- A later attempt of the same invocation finds that record, prints the recorded
  error and exits with the recorded status at once: nothing is trained, loaded
  or written. A new invocation (or DVC, or a command by hand: no id) runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable

from tprepro.invocation import INVOCATION_ENV
from tprepro.io import atomic_write_text
from tprepro.train.preemption import REQUEUE_EXIT

FAILURE_FILE = "last_failure.json"


def recorded_failure(checkpoints: Path, invocation: str) -> dict | None:
    """This invocation's earlier failure in `checkpoints`, if one is recorded."""
    try:
        record = json.loads((checkpoints / FAILURE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("invocation") == invocation and isinstance(record.get("status"), int):
        return record
    return None


def run_guarded(command: str, checkpoints: Path, run: Callable[[], int], last_error: Callable[[], str]) -> int:
    """`run()` (a training command's exit status) unless this invocation already failed it for good.

    `last_error()` is the one-line error the command printed (recorded with the status).
    """
    invocation = os.environ.get(INVOCATION_ENV)
    if not invocation or "RANK" in os.environ:  # not under Snakemake, or a data-parallel worker
        return run()
    earlier = recorded_failure(checkpoints, invocation)
    if earlier is not None:
        print(f"tprepro {command}: not retried: an earlier attempt in this invocation failed with exit status "
              f"{earlier['status']} ({earlier.get('error', '')}); only preemption (exit status {REQUEUE_EXIT}) "
              f"is requeued. Record: {checkpoints / FAILURE_FILE}", file=sys.stderr)
        return earlier["status"]
    try:
        status = run()
    except Exception as exc:  # a crash: Python prints the traceback and exits 1
        _record(checkpoints, invocation, 1, f"{type(exc).__name__}: {exc}")
        raise
    if status not in (0, REQUEUE_EXIT):
        _record(checkpoints, invocation, status, last_error())
    return status


def _record(checkpoints: Path, invocation: str, status: int, error: str) -> None:
    body = {"invocation": invocation, "status": status, "error": (error.strip().splitlines() or [""])[0][:500]}
    atomic_write_text(checkpoints / FAILURE_FILE, json.dumps(body, indent=1) + "\n")
