"""One trainer per checkpoint folder: an exclusive `flock` on `<checkpoints>/trainer.lock`.

The lock is held for the whole training command and released by the kernel when the process
ends, however it ends (kill -9 included), so a stale lock never blocks a later run. The file
records the holder (pid, host, start time), which a second trainer on the folder names when it
refuses to start (exit status 2). Data-parallel workers run under their launcher's lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from tprepro.errors import TpreproError

LOCK_FILE = "trainer.lock"


class FolderBusy(TpreproError):
    """Another live process trains into this checkpoint folder."""


def _holder(path: Path) -> str:
    """The holder as its lock file records it (read again briefly: it may be being written)."""
    for _ in range(20):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return f"pid {record['pid']} on {record['host']}, started {record['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            time.sleep(0.05)
    return "a process that has not yet recorded itself"


@contextlib.contextmanager
def trainer_lock(checkpoints: Path) -> Iterator[None]:
    """Hold `checkpoints`' trainer lock while the block runs; FolderBusy if another process holds it."""
    checkpoints.mkdir(parents=True, exist_ok=True)
    path = checkpoints / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(f"{checkpoints} is already being trained by {_holder(path)} (lock {path}); "
                             f"one trainer per checkpoint folder: wait for it, or stop it first") from None
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started})
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{record}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock (the kernel does the same when the process dies)
