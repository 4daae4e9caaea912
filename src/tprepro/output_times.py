"""Snakemake decides reruns by modification times; DVC by content. So that the two agree after a byte-identical
rewrite of a pipeline output (`dvc repro` or `dvc checkout` restoring it from DVC's cache, a copy of the project
without timestamps, a stage rerun that wrote the same bytes), each Snakemake invocation first settles the
outputs' times: a ledger keeps every output's content digest with the mtime it had when that content was first
seen, and an output whose mtime moved while its content stayed gets that mtime back. An output whose content
changed is recorded with its new time, so what reads it reruns, as under DVC.

Cost: a stat per output and carrier each invocation; an output is hashed only when its mtime moved (or the
first time it is seen), as DVC hashes it on `dvc status`."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tprepro.io import atomic_write_text, sha256_file

LEDGER = Path(".snakemake/tprepro/output_times.json")
TIMESTAMP = ".snakemake_timestamp"  # Snakemake's mtime carrier inside a directory output
NOT_CONTENT = {TIMESTAMP, "trainer.lock"}  # files in an output folder that are not its content (as .dvcignore)


def settle(paths: list[str], ledger: Path = LEDGER) -> list[str]:
    """Give each of `paths` (outputs, files or folders) whose content is what the ledger holds the mtime
    the ledger holds; record the others' content and mtime. Returns the paths whose times were restored."""
    original = _read(ledger)
    recorded, restored = dict(original), []
    for path in paths:
        carrier = _carrier(path)
        if carrier is None:
            continue
        mtime = os.stat(carrier).st_mtime_ns
        entry = recorded.get(path)
        if entry is not None and entry["mtime_ns"] == mtime:
            continue
        digest = content_digest(path)
        if entry is not None and entry["digest"] == digest:
            os.utime(carrier, ns=(entry["mtime_ns"], entry["mtime_ns"]))
            restored.append(path)
        else:
            recorded[path] = {"digest": digest, "mtime_ns": mtime}
    if recorded != original:
        atomic_write_text(ledger, json.dumps(recorded, indent=0, sort_keys=True) + "\n")
    return restored


def content_digest(path: str) -> str:
    """SHA-256 of a file, or of a folder's files (their relative paths and SHA-256s, `NOT_CONTENT` left out)."""
    if not os.path.isdir(path):
        return sha256_file(path)
    listing = hashlib.sha256()
    for root, folders, files in os.walk(path):
        folders.sort()
        for name in sorted(set(files) - NOT_CONTENT):
            file = os.path.join(root, name)
            listing.update(f"{os.path.relpath(file, path)}  {sha256_file(file)}\n".encode())
    return listing.hexdigest()


def _carrier(path: str) -> str | None:
    """The file whose mtime Snakemake reads for output `path` (a folder's timestamp file, if it has one), or
    None if `path` does not exist."""
    if os.path.isdir(path):
        stamp = os.path.join(path, TIMESTAMP)
        return stamp if os.path.exists(stamp) else path
    return path if os.path.exists(path) else None


def _read(ledger: Path) -> dict:
    """The ledger's entries; an unreadable ledger (damaged, say) is started again (times are then recorded
    as they are now, which is what Snakemake would read without it)."""
    try:
        return json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
