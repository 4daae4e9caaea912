"""`tprepro dvc-commit` (`make dvc-commit`, the last DVC step of `make run`): record in dvc.lock what
Snakemake built, and recover from a commit that was interrupted.

DVC rewrites dvc.lock in place, so a commit killed mid-write (Ctrl-C, kill -9, a full disk) can leave
it truncated; every DVC command then fails on it, `dvc commit --force` included, and git cannot restore
it (it is not tracked). So dvc.lock is first loaded as DVC loads it: one that DVC refuses is moved aside
(`dvc.lock.damaged-<UTC time>`, kept, never deleted) with a warning, and the commit records every stage
afresh from the outputs on disk. `--force --no-relink`: nothing is rebuilt, and no output is rewritten
or relinked (a relinked file would look new to Snakemake). A failing DVC is reported in its own words
and its exit status is this command's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tprepro.io import move_aside

LOCK = "dvc.lock"
COMMIT = ("commit", "--force", "--no-relink")  # dvc commit ...


def lock_damage(root: Path) -> str | None:
    """Why DVC cannot read `root`'s dvc.lock (its own error), or None: readable, absent, or no DVC
    project here (the commit then says so itself)."""
    from dvc.dvcfile import Lockfile
    from dvc.exceptions import DvcException
    from dvc.repo import Repo
    from dvc.utils.serialize import ParseError
    from dvc.utils.strictyaml import YAMLValidationError

    if not (root / LOCK).is_file():
        return None
    try:
        repo = Repo(str(root))
    except DvcException:
        return None
    with repo:
        try:
            Lockfile(repo, str(Path(repo.root_dir) / LOCK)).load()
        except (ParseError, YAMLValidationError) as exc:  # not YAML, not UTF-8, or not a lock file
            cause = f": {exc.__cause__}".splitlines()[0] if exc.__cause__ else ""
            return f"DVC cannot read it ({exc}{cause})"
        except DvcException:  # not damage (e.g. git-ignored): the commit reports it in DVC's words
            return None
    return None


def commit(root: Path = Path(".")) -> int:
    """Move a dvc.lock DVC cannot read aside, then `dvc commit --force --no-relink`; DVC's exit status."""
    damage = lock_damage(root)
    if damage is not None:
        move_aside(root / LOCK, "damaged", f"{damage}, as an interrupted `dvc commit` leaves it; every stage "
                                           f"is recorded again from its outputs, nothing is rebuilt")
    done = subprocess.run([sys.executable, "-m", "dvc", *COMMIT], cwd=root, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout)
        print(f"tprepro dvc-commit: error: `dvc {' '.join(COMMIT)}` failed with exit status {done.returncode} "
              f"(DVC's error above); `dvc status` will list every stage until it succeeds", file=sys.stderr)
        return done.returncode
    print(f"{LOCK} records the outputs Snakemake built (dvc status: clean)")
    return 0
