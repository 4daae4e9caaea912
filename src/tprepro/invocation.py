"""The pipeline invocation's key, an environment variable that Snakemake's `onstart` exports
(tprepro.workflow.start_pipeline_run) and every job of that invocation inherits: training requeues
only on preemption within it (train/requeue.py), and MLflow runs find their parent run by it
(tracking/parents.py).

A key names the process that owns the invocation, `<host>:<pid>:<start>[:<nonce>]` (`start`: the
process's start time in clock ticks since boot, so a reused pid is another process): Snakemake's
process, or without Snakemake the process-group leader (`dvc repro`). A later invocation can so
tell a parent run left RUNNING by a killed one from one still alive (`owner_alive`)."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

INVOCATION_ENV = "TPREPRO_INVOCATION"


def process_start(pid: int) -> str | None:
    """Process `pid`'s start time (clock ticks since boot, /proc/<pid>/stat), None if there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _key_of(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:{process_start(pid) or '?'}"


def group_key() -> str:
    """The key of this process group (all stages of one `dvc repro` share it)."""
    return _key_of(os.getpgrp())


def new_key() -> str:
    """A fresh key owned by this process (Snakemake's onstart)."""
    return f"{_key_of(os.getpid())}:{uuid.uuid4().hex}"


def owner_alive(key: str) -> bool | None:
    """Whether the process owning invocation `key` still runs: None when this host cannot tell (another
    host, or a key without its owner, as keys before owners were recorded)."""
    parts = key.split(":")
    if len(parts) < 3 or not parts[1].isdigit() or parts[2] == "?" or parts[0] != socket.gethostname():
        return None
    return process_start(int(parts[1])) == parts[2]
