"""Atomic file writes: a reader never sees a half-written file, a crash never loses a finished one.

Every write goes to a temporary path beside its target, is flushed to disk (fsync of the file,
then of the directory after the rename) and only then replaces the target. An OSError on the way
(disk full, read-only file system, file too large) becomes a TpreproError naming the target.

Files a later stage reads whole (vocabularies, subword models) also get their digest recorded
beside them (`record_digest`: `<name>.sha256`, in sha256sum's format) and are read back through
`read_verified`, which refuses a file whose content changed since it was written, naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

from tprepro.errors import TpreproError

if TYPE_CHECKING:
    import pandas as pd

# mkstemp/mkdtemp create private (0600/0700) entries; published files get the usual modes.
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK
DIR_MODE = 0o777 & ~_UMASK


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a written file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: str | os.PathLike) -> None:
    """Flush a directory's entries (a rename into it) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            fsync_file(Path(directory) / name)
        fsync_directory(directory)


def write_error(target: Path, exc: OSError) -> TpreproError:
    """The TpreproError for an OSError met while writing `target` (disk full, read-only, ...)."""
    reason = exc.strerror or str(exc)
    return TpreproError(f"{target}: cannot write ({reason})")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` on success.

    On any exception the temporary file is removed and `target` is untouched.
    """
    target = Path(target)
    tmp_path = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        yield tmp_path
        fsync_file(tmp_path)
        os.chmod(tmp_path, FILE_MODE)
        os.replace(tmp_path, target)
        fsync_directory(target.parent)
    except OSError as exc:
        raise write_error(target, exc) from exc
    finally:
        if tmp_path is not None:
            tmp_path.unlink(missing_ok=True)


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    """Write `text` to `target` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def clean_stale_directories(target: str | os.PathLike) -> list[Path]:
    """Remove the hidden temporary directories an earlier, killed `atomic_directory(target)` left.

    `.<name>.XXXX.tmp/` holds partial output and is deleted. `.<name>.old/` is a finished
    earlier version: restored as `target` when a kill fell between the two renames (target
    missing), deleted otherwise. Returns what was deleted. One writer per target is assumed
    (as Snakemake and DVC guarantee).
    """
    target = Path(target)
    if not target.parent.is_dir():
        return []
    old = target.with_name(f".{target.name}.old")
    removed = []
    if old.is_dir() and not target.exists():
        os.replace(old, target)
    elif old.exists():
        shutil.rmtree(old)
        removed.append(old)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale)
            removed.append(stale)
    return removed


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory beside `target`; swap it into place on success.

    An existing `target` is replaced only after the new content is complete and on disk.
    Temporary directories left by an earlier killed writer are cleaned first.
    """
    target = Path(target)
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for stale in clean_stale_directories(target):
            print(f"removed {stale} (left by an interrupted earlier run)", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        yield tmp
        _fsync_tree(tmp)
        os.chmod(tmp, DIR_MODE)
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            os.replace(target, old)
            os.replace(tmp, target)
            fsync_directory(target.parent)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
            fsync_directory(target.parent)
    except OSError as exc:
        raise write_error(target, exc) from exc
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_files(targets: Mapping[str, str | os.PathLike]) -> Iterator[dict[str, Path]]:
    """Yield {key: temporary path} for several outputs; on success replace them all, else none.

    The files are written into one hidden temporary directory beside the first target, flushed,
    and only then renamed onto their targets one by one (same file system: each rename is
    atomic). An exception while writing leaves every target as it was.
    """
    paths = {key: Path(p) for key, p in targets.items()}
    first = next(iter(paths.values()))
    staging = None
    try:
        for path in paths.values():
            path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{first.name}.", suffix=".files.tmp", dir=first.parent))
        temporary = {key: staging / f"{index}-{path.name}" for index, (key, path) in enumerate(paths.items())}
        yield temporary
        missing = [str(paths[key]) for key, tmp in temporary.items() if not tmp.is_file()]
        if missing:
            raise TpreproError(f"{', '.join(missing)}: not written (no output is replaced)")
        for tmp in temporary.values():
            fsync_file(tmp)
            os.chmod(tmp, FILE_MODE)
        for key, tmp in temporary.items():
            os.replace(tmp, paths[key])
        for directory in {path.parent for path in paths.values()}:
            fsync_directory(directory)
    except OSError as exc:
        raise write_error(first, exc) from exc
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def move_aside(path: str | Path, reason: str, why: str) -> Path:
    """Rename `path` to `<path>.<reason>-<UTC time>` (never overwriting) and warn naming both files."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.{reason}-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{reason}-{stamp}-{n}")
        n += 1
    path.rename(target)
    print(f"WARNING: {path}: {why}; moved aside to {target}", file=sys.stderr, flush=True)
    return target


def utc_stamp() -> str:
    """The time now, for log lines: "2026-11-23 14:05:09 UTC"."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


DIGEST_SUFFIX = ".sha256"


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + DIGEST_SUFFIX)


def forget_digest(path: str | os.PathLike) -> None:
    """Remove `path`'s recorded digest before `path` is rewritten: a writer killed between the file and its
    digest then leaves a file without one (refused as unfinished where the digest is required), never a new
    file beside the old file's digest (which would read as a changed file)."""
    try:
        digest_path(path).unlink(missing_ok=True)
    except OSError as exc:
        raise write_error(digest_path(path), exc) from exc


def record_digest(path: str | os.PathLike) -> None:
    """Record the sha256 of the finished file `path` in `<path>.sha256` (sha256sum's format)."""
    atomic_write_text(digest_path(path), f"{sha256_file(path)}  {Path(path).name}\n")


def read_verified(path: str | os.PathLike, required: bool = False) -> bytes:
    """The bytes of `path`, checked against its recorded digest. `required` (files whose writer has always
    recorded one: evaluation files): a missing digest is an error, so removing the sidecar cannot disable
    the check; otherwise a file without one (written before digests were recorded) is read as it is.
    Raises FileNotFoundError for a missing file."""
    path = Path(path)
    body = path.read_bytes()
    recorded = digest_path(path)
    if required and not recorded.is_file():
        raise TpreproError(f"{path}: no recorded digest ({recorded.name} is missing), so its content cannot be "
                           f"checked: the stage that makes it did not finish, or the digest was removed; rerun "
                           f"that stage")
    if recorded.is_file():
        expected = recorded.read_text(encoding="utf-8", errors="replace").split()[:1]
        if [hashlib.sha256(body).hexdigest()] != expected:
            raise TpreproError(f"{path}: its content changed after it was written (sha256 differs from "
                               f"{recorded.name}); rerun the stage that makes it")
    return body


def read_checked_csv(path: Path, columns: Sequence[str], kind: str, digested: bool = False,
                     **read_options) -> "pd.DataFrame":
    """`columns` of the CSV at `path` (`read_options`: for pandas.read_csv); an unreadable file, one
    whose content differs from its recorded digest (report.tables.write_digested_csv), one without a digest where
    `digested` (its writer always records one) or a missing column is an error naming the file."""
    import io

    import pandas as pd

    try:
        frame = pd.read_csv(io.BytesIO(read_verified(path, required=digested)), **read_options)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TpreproError(f"{path}: unreadable {kind} ({exc})") from exc
    missing = set(columns) - set(frame.columns)
    if missing:
        raise TpreproError(f"{path}: missing columns {sorted(missing)}")
    return frame[list(columns)]
