"""One trainer per folder: an exclusive `flock` on `<folder>/trainer.lock`, for the checkpoint folder
(`--checkpoints`) and the model folder (`--out`) of a training run alike.

The lock is held for the whole training command and released by the kernel when the process
ends, however it ends (kill -9 included), so a stale lock never blocks a later run. The file
records the holder (pid, host, start time) and what the folder is to it (its kind: "checkpoints"
or "model"), which a second trainer on the folder names when it refuses to start (exit status 2).
A folder that already holds the other kind of output (a model folder given as `--checkpoints`, a
checkpoint folder as `--out`, or one folder as both) is refused before anything is written in it
(`claim_training_folders`). Data-parallel workers run under their launcher's locks.
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
from tprepro.train.files import CHECKPOINT_FILE, MLFLOW_MODEL, MODEL_FILE, TRAIN_METRICS
from tprepro.train.requeue import FAILURE_FILE

LOCK_FILE = "trainer.lock"
CHECKPOINTS, MODEL = "checkpoints", "model"  # the kinds of folder a training run owns
# What marks a folder as one kind's: the files only that kind's folder holds. A lock file without a kind is one
# written before kinds were recorded: a checkpoint folder's.
MARKERS = {CHECKPOINTS: (CHECKPOINT_FILE, FAILURE_FILE, MLFLOW_MODEL),
           MODEL: (MODEL_FILE, TRAIN_METRICS)}
OPTIONS = {CHECKPOINTS: "--checkpoints", MODEL: "--out"}


class FolderBusy(TpreproError):
    """Another live process trains into this folder."""


class WrongFolder(TpreproError):
    """The folder holds another kind of training output than the one it is given for."""


def recorded_kind(folder: Path) -> str | None:
    """The kind of training folder `folder` is, by the files in it or its lock's record; None if neither says."""
    for kind, names in MARKERS.items():
        if any((folder / name).exists() for name in names):
            return kind
    try:
        record = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record.get("kind", CHECKPOINTS) if isinstance(record, dict) else None


def refuse_other_kind(folder: Path, kind: str) -> None:
    """WrongFolder if `folder` holds another kind of training output than `kind`."""
    found = recorded_kind(folder)
    if found is not None and found != kind:
        marker = next((name for name in MARKERS[found] if (folder / name).exists()), LOCK_FILE)
        raise WrongFolder(f"{folder} is a {found} folder (it holds {marker}), not a {kind} folder: refusing to "
                          f"train into it as {OPTIONS[kind]}; were {OPTIONS[MODEL]} and {OPTIONS[CHECKPOINTS]} "
                          f"swapped? Nothing was written")


def _holder(path: Path) -> str:
    """The holder as its lock file records it (read again briefly: it may be being written)."""
    for _ in range(20):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return f"pid {record['pid']} on {record['host']}, started {record['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            time.sleep(0.05)
    return "a process that has not yet recorded itself"


def remove_if_untouched(folder: Path) -> None:
    """Remove `folder`, which a lock created, if it holds nothing but the lock file: a run refused or failed
    before it wrote anything (a mistyped --model, missing data) leaves no folder behind. Called while the lock
    is held, so a trainer that opened the file meanwhile fails to lock it and refuses."""
    try:
        if [entry.name for entry in folder.iterdir()] == [LOCK_FILE]:
            (folder / LOCK_FILE).unlink()
            folder.rmdir()
    except OSError:  # another process wrote in it meanwhile: it stays
        pass


@contextlib.contextmanager
def trainer_lock(checkpoints: Path, kind: str = CHECKPOINTS) -> Iterator[None]:
    """Hold the trainer lock of `checkpoints` (a folder of `kind`) while the block runs; FolderBusy if another
    process holds it, WrongFolder (the lock left untouched) if the folder holds another kind of output."""
    refuse_other_kind(checkpoints, kind)  # before anything is written in it
    created = not checkpoints.exists()
    checkpoints.mkdir(parents=True, exist_ok=True)
    path = checkpoints / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    locked = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            raise FolderBusy(f"{checkpoints} is already being trained by {_holder(path)} (lock {path}); "
                             f"one trainer per {kind} folder: wait for it, or stop it first") from None
        refuse_other_kind(checkpoints, kind)  # again under the lock: a run of the other kind may just have begun
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started, "kind": kind})
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{record}\n".encode(), 0)
        yield
    finally:
        if created and locked:
            remove_if_untouched(checkpoints)
        os.close(fd)  # releases the lock (the kernel does the same when the process dies)


@contextlib.contextmanager
def claim_training_folders(out: Path, checkpoints: Path) -> Iterator[None]:
    """Hold the locks of a training run's model folder `out` and checkpoint folder `checkpoints` while the
    block runs: each refused (nothing written in either) if it holds the other kind of output, if both are
    one folder, or (FolderBusy) if another live trainer holds it."""
    if out.resolve() == checkpoints.resolve():
        raise WrongFolder(f"{out} is given as both {OPTIONS[MODEL]} and {OPTIONS[CHECKPOINTS]}: a run's model "
                          f"and its checkpoints go to two folders. Nothing was written")
    refuse_other_kind(checkpoints, CHECKPOINTS)
    refuse_other_kind(out, MODEL)
    with trainer_lock(checkpoints, CHECKPOINTS), trainer_lock(out, MODEL):
        yield
