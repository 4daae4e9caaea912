"""Snakemake decides reruns by modification times; DVC by content. So that the two agree, each Snakemake
invocation first settles the outputs' times from a ledger that keeps every output's content digest with the
mtime it was given for that content:

- rewritten with the same bytes (`dvc checkout` or `dvc exp apply` restoring it, a copy of the project without
  timestamps, a touch, a job rerun that wrote the same bytes): it gets its recorded mtime back, so what reads it
  does not rerun, unless that time is older than what it was made from (its job reran because an input changed
  and wrote the same bytes): then it keeps its new time, as Snakemake needs to see the job done;
- changed: recorded with its time, moved to now if it did not move forward (a file edited in place inside a
  folder, a copy that kept an older time), so what reads it reruns, as under DVC.

Jobs are settled in the order they run, each output against the settled times of its inputs. A folder's
time is its `.snakemake_timestamp` (Snakemake's carrier) and its files' times; its content, its files.

Cost: a stat per output file each invocation; an output is hashed only when a time in it moved (or the first
time it is seen), as DVC hashes it on `dvc status`."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tprepro.io import atomic_write_text, sha256_file
from tprepro.train.folder_lock import LOCK_FILE

LEDGER = Path(".snakemake/tprepro/output_times.json")
TIMESTAMP = ".snakemake_timestamp"  # Snakemake's mtime carrier inside a directory output
# Files in an output folder that are not its content (as .dvcignore): Snakemake's carrier and a training's lock.
NOT_CONTENT = {TIMESTAMP, LOCK_FILE}


@dataclass(frozen=True)
class Made:
    """One job's outputs and the paths they are made from (its inputs, its code digest)."""

    outputs: tuple[str, ...]
    inputs: tuple[str, ...] = ()


def settle(jobs: Sequence[Made], ledger: Path = LEDGER) -> list[str]:
    """Settle the times of `jobs`' outputs (jobs in an order where every input's writer comes first) by
    the ledger; returns the outputs whose recorded times were given back."""
    original = _read(ledger)
    recorded, restored, settled = dict(original), [], {}
    for job in jobs:
        floor = max((_settled_time(path, settled) for path in job.inputs), default=0)
        for path in job.outputs:
            outcome = _settle_one(path, recorded, floor)
            if outcome is not None:
                settled[path], given_back = outcome
                restored += [path] if given_back else []
    if recorded != original:
        atomic_write_text(ledger, json.dumps(recorded, indent=0, sort_keys=True) + "\n")
    return restored


def _settle_one(path: str, recorded: dict, floor: int) -> tuple[int, bool] | None:
    """Settle one output made no earlier than `floor` against its ledger entry (updated in place): (its time,
    whether its recorded time was given back), or None if it does not exist."""
    carrier = _carrier(path)
    if carrier is None:
        return None
    entry = recorded.get(path)
    if entry is not None and entry.get("stamp") == _stamp(path, carrier):
        return entry["mtime_ns"], False
    digest, mtime = content_digest(path), os.stat(carrier).st_mtime_ns
    same = entry is not None and entry["digest"] == digest
    if same and entry["mtime_ns"] >= floor:  # the same content, made after its inputs: its time back
        _set_time(carrier, entry["mtime_ns"])
        recorded[path] = {**entry, "stamp": _stamp(path, carrier)}
        return entry["mtime_ns"], True
    if entry is not None and not same and mtime <= entry["mtime_ns"]:  # new content at an old time
        mtime = time.time_ns()
        _set_time(carrier, mtime)
    recorded[path] = {"digest": digest, "mtime_ns": mtime, "stamp": _stamp(path, carrier)}
    return mtime, False


def _settled_time(path: str, settled: dict[str, int]) -> int:
    """An input's time: as settled this invocation, else its carrier's mtime (0 if it does not exist)."""
    if path in settled:
        return settled[path]
    carrier = _carrier(path)
    return os.stat(carrier).st_mtime_ns if carrier else 0


def content_digest(path: str) -> str:
    """SHA-256 of a file, or of a folder's files (their relative paths and SHA-256s, `NOT_CONTENT` left out)."""
    if not os.path.isdir(path):
        return sha256_file(path)
    listing = hashlib.sha256()
    for file in _content_files(path):
        listing.update(f"{os.path.relpath(file, path)}  {sha256_file(file)}\n".encode())
    return listing.hexdigest()


def _content_files(folder: str) -> Iterable[str]:
    """The content files of `folder`, recursively, in a fixed order."""
    for root, folders, files in os.walk(folder):
        folders.sort()
        for name in sorted(set(files) - NOT_CONTENT):
            yield os.path.join(root, name)


def _stamp(path: str, carrier: str) -> str:
    """What moves when `path` is rewritten: its mtime and size, or a folder's carrier's mtime with every content
    file's name, mtime and size (an edit in place inside a folder moves the files', not the carrier's)."""
    if carrier == path and not os.path.isdir(path):
        stat = os.stat(path)
        return f"{stat.st_mtime_ns}:{stat.st_size}"
    listing = hashlib.sha256(str(os.stat(carrier).st_mtime_ns).encode())
    for file in _content_files(path):
        stat = os.stat(file)
        listing.update(f"{os.path.relpath(file, path)}:{stat.st_mtime_ns}:{stat.st_size}\n".encode())
    return listing.hexdigest()


def _set_time(carrier: str, mtime_ns: int) -> None:
    os.utime(carrier, ns=(mtime_ns, mtime_ns))


def _carrier(path: str) -> str | None:
    """The file whose mtime Snakemake reads for output `path` (a folder's timestamp file, if it has one), or
    None if `path` does not exist."""
    if os.path.isdir(path):
        stamp = os.path.join(path, TIMESTAMP)
        return stamp if os.path.exists(stamp) else path
    return path if os.path.exists(path) else None


def _read(ledger: Path) -> dict:
    """The ledger's entries. A ledger that cannot be read or is not one (damaged, or another program's file) is
    started again, saying so: times are then recorded as they are now, which is what Snakemake reads without it."""
    try:
        entries = json.loads(ledger.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        return _restart(ledger, f"unreadable ({exc})")
    if not isinstance(entries, dict):
        return _restart(ledger, f"not a ledger (a JSON {type(entries).__name__}, not an object of outputs)")
    for path, entry in entries.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("digest"), str)
                and isinstance(entry.get("mtime_ns"), int) and isinstance(entry.get("stamp", ""), str)):
            return _restart(ledger, f"not a ledger (its entry for {path!r} is not {{digest, mtime_ns, stamp}})")
    return entries


def _restart(ledger: Path, why: str) -> dict:
    print(f"tprepro: {ledger}: {why}; starting it again (outputs keep the times they have now)", file=sys.stderr)
    return {}
