"""Finished trainings' final states, kept in the checkpoint folder so that a training resumes from the
furthest one its settings continue, whichever run wrote checkpoint.pt last.

A checkpoint folder outlives experiments: after `dvc exp apply` of a 1,000-step run, checkpoint.pt may
hold another experiment's 2,000 steps, which cannot resume to 1,500. So every finished training keeps
its final checkpoint.pt, with the files written beside it at each checkpoint (the learning curve), in
`<checkpoints>/finished/<fingerprint[:16]>-<step>/`. The folder is named by the training's fingerprint
(train/trainer.py TrainJob.fingerprint: everything but the settings a resume may change) and its step;
a training starting under that fingerprint to `steps` resumes from the kept state with the highest step
<= `steps` when checkpoint.pt is not further along (Trainer._maybe_resume), and resuming puts that
state's files back in the folder. Its files are hard links to the ones it finished with (copies where
the file system has no links): the newest costs no disk until the next training rewrites checkpoint.pt,
which is replaced, never written in place (io.atomic_path). The newest `KEEP` states of a folder are
kept, the older ones deleted (each is a cache of a finished training; its model is in DVC's cache and MLflow).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

KEPT = "finished"  # <checkpoints>/finished/<fingerprint[:16]>-<step>/
KEEP = 4  # finished states kept per checkpoint folder, newest first
_NAME = re.compile(r"^(?P<fingerprint>[0-9a-f]{16})-(?P<step>\d+)$")


def state_folder(checkpoints: Path, fingerprint: str, step: int) -> Path:
    """Where the finished state of a training under `fingerprint` at `step` is kept."""
    return Path(checkpoints) / KEPT / f"{fingerprint[:16]}-{step}"


def _link(source: Path, target: Path) -> None:
    """`target` becomes `source`'s file (a hard link; a copy where links fail), replacing it atomically."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)
    try:
        try:
            os.link(source, tmp)
        except OSError:  # no hard links here (another file system, FAT, some network mounts)
            shutil.copy2(source, tmp)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def holds(checkpoint: Path) -> bool:
    """Whether `checkpoint` is one of its folder's kept finished states (the same file)."""
    checkpoint = Path(checkpoint)
    kept = checkpoint.parent / KEPT
    return checkpoint.is_file() and kept.is_dir() and any(
        (folder / checkpoint.name).is_file() and os.path.samefile(folder / checkpoint.name, checkpoint)
        for folder in kept.iterdir())


def keep(checkpoint: Path, fingerprint: str, step: int, beside: Sequence[str] = ()) -> Path:
    """Keep `checkpoint` (a finished training's final state under `fingerprint` at `step`) and the files
    named `beside` that are next to it; prune the folder to the newest KEEP. Returns the state's folder."""
    checkpoint = Path(checkpoint)
    folder = state_folder(checkpoint.parent, fingerprint, step)
    if (folder / checkpoint.name).is_file() and os.path.samefile(folder / checkpoint.name, checkpoint):
        return folder  # kept already (a finished training re-invoked, or resumed from this state)
    names = [checkpoint.name, *(name for name in beside if (checkpoint.parent / name).is_file())]
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name in names:
            _link(checkpoint.parent / name, building / name)
        if folder.exists():  # another state at this fingerprint and step: the newest wins
            shutil.rmtree(folder)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    prune(checkpoint.parent, spare=folder)
    return folder


def prune(checkpoints: Path, spare: Path | None = None) -> list[Path]:
    """Delete all but the newest KEEP kept states of `checkpoints` (never `spare`); the folders deleted."""
    kept = Path(checkpoints) / KEPT
    folders = sorted((f for f in kept.iterdir() if f.is_dir() and _NAME.match(f.name)),
                     key=lambda f: f.stat().st_mtime_ns, reverse=True) if kept.is_dir() else []
    old = [folder for folder in folders[KEEP:] if folder != spare]
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return old


def furthest(checkpoint: Path, fingerprint: str, steps: int) -> tuple[int, Path] | None:
    """(step, kept file) of the kept state of `checkpoint` under `fingerprint` with the highest step <= `steps`."""
    checkpoint = Path(checkpoint)
    kept = checkpoint.parent / KEPT
    found = [(int(m["step"]), f) for f in (kept.iterdir() if kept.is_dir() else ())
             if (m := _NAME.match(f.name)) and m["fingerprint"] == fingerprint[:16] and int(m["step"]) <= steps
             and (f / checkpoint.name).is_file()]
    if not found:
        return None
    step, folder = max(found)
    return step, folder / checkpoint.name


def restore(state: Path, checkpoint: Path) -> None:
    """Put the kept state `state` (a file `furthest` returned) and the files kept with it back beside
    `checkpoint`, replacing theirs; the state counts as the folder's newest (`prune`)."""
    folder = Path(state).parent
    for source in folder.iterdir():
        if source.is_file() and not source.name.startswith("."):
            _link(source, Path(checkpoint).parent / source.name)
    os.utime(folder)
