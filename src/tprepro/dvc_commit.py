"""`tprepro dvc-commit` (`make dvc-commit`, the last DVC step of `make run`): record in dvc.lock what
Snakemake built, and recover from a commit that was interrupted.

DVC rewrites dvc.lock in place, so a commit killed mid-write (Ctrl-C, kill -9, a full disk) can leave
it truncated; every DVC command then fails on it, `dvc commit --force` included, and git cannot restore
it (it is not tracked). So dvc.lock is first loaded as DVC loads it: one that DVC refuses is moved aside
(`dvc.lock.damaged-<UTC time>`, kept, never deleted) with a warning, and the commit records every stage
afresh from the outputs on disk. `--force --no-relink`: nothing is rebuilt, and no output is rewritten
or relinked (a relinked file would look new to Snakemake). A failing DVC is reported in its own words
and its exit status is this command's.

The check runs under DVC's own repository lock (`.dvc/tmp/lock`, which every DVC command that writes
takes): a dvc.lock that another DVC process is writing is never taken for damage. When another DVC
process holds the lock (a second `make dvc-commit`, a `dvc repro`), nothing is changed and the error
says so: run it again once that process has ended. The lock is released before `dvc commit` takes it
in turn; a DVC command that starts in that instant makes the commit fail on the lock (the same error).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tprepro.io import move_aside

LOCK = "dvc.lock"
COMMIT = ("commit", "--force", "--no-relink")  # dvc commit ...


LOCK_BUSY = "Unable to acquire lock"  # how DVC's error begins when another DVC process holds the repository


def busy(root: Path) -> str:
    """The error when another DVC process holds `root`'s repository lock."""
    return (f"tprepro dvc-commit: error: another DVC process holds this project's lock ({root / '.dvc' / 'tmp' / 'lock'}): "
            f"another `make dvc-commit`, or a `dvc repro`, is still running. Nothing was changed; run `make "
            f"dvc-commit` again once it has ended")


def lock_damage(repo) -> str | None:
    """Why DVC cannot read `repo`'s dvc.lock (its own error), or None: readable or absent."""
    from dvc.dvcfile import Lockfile
    from dvc.exceptions import DvcException
    from dvc.utils.serialize import ParseError
    from dvc.utils.strictyaml import YAMLValidationError

    if not (Path(repo.root_dir) / LOCK).is_file():
        return None
    try:
        Lockfile(repo, str(Path(repo.root_dir) / LOCK)).load()
    except (ParseError, YAMLValidationError) as exc:  # not YAML, not UTF-8, or not a lock file
        cause = f": {exc.__cause__}".splitlines()[0] if exc.__cause__ else ""
        return f"DVC cannot read it ({exc}{cause})"
    except DvcException:  # not damage (e.g. git-ignored): the commit reports it in DVC's words
        return None
    return None


def repair_damaged_lock(root: Path) -> bool:
    """Under DVC's repository lock, move aside a dvc.lock DVC cannot read; False if another DVC process
    holds the lock (nothing done). No DVC project here: nothing to do (the commit then says so itself)."""
    from dvc.exceptions import DvcException
    from dvc.lock import LockError
    from dvc.repo import Repo, lock_repo

    try:
        repo = Repo(str(root))
    except DvcException:
        return True
    with repo:
        try:
            with lock_repo(repo):  # as `dvc commit` takes it: no DVC process writes dvc.lock meanwhile
                damage = lock_damage(repo)
                if damage is not None:
                    move_aside(root / LOCK, "damaged",
                               f"{damage}, as an interrupted `dvc commit` leaves it; every stage is recorded "
                               f"again from its outputs, nothing is rebuilt")
        except LockError:
            return False
    return True


def commit(root: Path = Path(".")) -> int:
    """Move a dvc.lock DVC cannot read aside, then `dvc commit --force --no-relink`; DVC's exit status
    (1, changing nothing, when another DVC process holds the project's lock)."""
    if not repair_damaged_lock(root):
        print(busy(root), file=sys.stderr)
        return 1
    done = subprocess.run([sys.executable, "-m", "dvc", *COMMIT], cwd=root, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout)
        if LOCK_BUSY in done.stdout:  # another DVC command took the lock after the check released it
            print(busy(root), file=sys.stderr)
        else:
            print(f"tprepro dvc-commit: error: `dvc {' '.join(COMMIT)}` failed with exit status {done.returncode} "
                  f"(DVC's error above); `dvc status` will list every stage until it succeeds", file=sys.stderr)
        return done.returncode
    print(f"{LOCK} records the outputs Snakemake built (dvc status: clean)")
    return 0
