"""`make dvc-commit` (tprepro dvc-commit): DVC's failure is make's, and a dvc.lock left damaged by an
interrupted commit (a real kill -9 mid-write, or the truncated file such a kill leaves) is moved aside and
recorded again from the outputs: `dvc status` clean, no output rebuilt or rewritten (issue 37)."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, tool_env

pytestmark = pytest.mark.slow  # DVC subprocesses

STAGES = 40
DVC_YAML = """stages:
  make:
    foreach: {items}
    do:
      cmd: echo rebuilt > out/${{item}}.txt
      deps:
      - src.txt
      outs:
      - out/${{item}}.txt
"""


def dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, env=tool_env(), capture_output=True,
                          text=True, timeout=600)


def make_dvc_commit(root: Path) -> subprocess.CompletedProcess:
    """The documented command, with this interpreter's venv as the Makefile's BIN."""
    shutil.copy(REPO / "Makefile", root / "Makefile")
    return subprocess.run(["make", "-s", "dvc-commit", f"BIN={Path(sys.executable).parent}"], cwd=root,
                          env=tool_env(), capture_output=True, text=True, timeout=600)


def outputs(root: Path) -> dict[str, tuple[int, int, str]]:
    """Each output's (inode, mtime, sha256): a rebuild, rewrite or relink changes one of them."""
    found = {}
    for path in sorted((root / "out").iterdir()):
        stat = path.stat()
        found[path.name] = (stat.st_ino, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


@pytest.fixture
def project(tmp_path) -> Path:
    """A DVC project whose outputs were built outside DVC (as Snakemake builds them) and committed."""
    root = tmp_path / "project"
    root.mkdir()
    assert dvc(root, "init", "--no-scm", "-q").returncode == 0
    (root / "dvc.yaml").write_text(DVC_YAML.format(items=list(range(STAGES))))
    (root / "src.txt").write_text("source\n")
    (root / "out").mkdir()
    for item in range(STAGES):
        (root / "out" / f"{item}.txt").write_text(f"built by another tool: {item}\n")
    committed = make_dvc_commit(root)
    assert committed.returncode == 0, committed.stderr
    assert committed.stdout.strip() == "dvc.lock records the outputs Snakemake built (dvc status: clean)"
    return root


def kill_commit_mid_write(root: Path) -> None:
    """A real `dvc commit`, killed (-9) as soon as it has dvc.lock open for writing."""
    lock = str(root / "dvc.lock")
    process = subprocess.Popen([sys.executable, "-m", "dvc", "commit", "--force", "--no-relink"], cwd=root,
                               env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while process.poll() is None:
            try:
                fds = os.listdir(f"/proc/{process.pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(f"/proc/{process.pid}/fd/{fd}")
                    flags = int(Path(f"/proc/{process.pid}/fdinfo/{fd}").read_text().split()[3], 8)
                except (OSError, IndexError, ValueError):
                    continue
                if target == lock and flags & (os.O_WRONLY | os.O_RDWR):
                    process.send_signal(signal.SIGKILL)
                    break
    finally:
        process.wait(timeout=600)
    assert process.returncode == -signal.SIGKILL, "dvc commit finished before it was killed"


def truncate_mid_line(root: Path) -> None:
    """What a kill mid-write leaves: the first part of the file, cut inside a line."""
    lock = root / "dvc.lock"
    data = lock.read_bytes()
    lock.write_bytes(data[: len(data) // 2 + 7])


@pytest.mark.parametrize("interrupt", [kill_commit_mid_write, truncate_mid_line], ids=["kill-9", "truncated"])
def test_an_interrupted_commit_is_repaired_by_make_dvc_commit_without_rebuilding(project, interrupt):
    before = outputs(project)
    interrupt(project)
    damaged = (project / "dvc.lock").read_bytes()
    broken = dvc(project, "status")
    assert broken.returncode != 0 and "dvc.lock" in broken.stderr  # the fault: DVC cannot go on

    repaired = make_dvc_commit(project)
    assert repaired.returncode == 0, repaired.stderr
    aside = [path for path in project.iterdir() if path.name.startswith("dvc.lock.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # kept as it was left
    assert "WARNING: dvc.lock: DVC cannot read it" in repaired.stderr and str(aside[0].name) in repaired.stderr
    status = dvc(project, "status")
    assert status.returncode == 0 and status.stdout.strip() == "Data and pipelines are up to date.", status
    assert outputs(project) == before  # nothing rebuilt, rewritten or relinked


def test_make_dvc_commit_fails_with_dvcs_own_error(tmp_path):
    failed = make_dvc_commit(tmp_path)  # not a DVC project
    assert failed.returncode != 0
    assert "you are not inside of a DVC repository" in failed.stderr
    assert "tprepro dvc-commit: error: `dvc commit --force --no-relink` failed with exit status" in failed.stderr
    assert "dvc.lock records" not in failed.stdout


HOLD_DVC_LOCK = ("import sys, time\nfrom dvc.repo import Repo\nrepo = Repo(sys.argv[1])\nrepo.lock.lock()\n"
                 "print('held', flush=True)\ntime.sleep(600)\n")


@pytest.mark.parametrize("lock_state", ["readable", "mid-write"])
def test_a_second_dvc_commit_while_dvc_holds_the_lock_changes_nothing_and_says_why(project, lock_state):
    """Another DVC process holds the project's lock (as the first of two concurrent `make dvc-commit`s, or a
    `dvc repro`, does): the second exits 1 saying so, with the right advice (issue 46: it said `dvc status`
    would list every stage); a dvc.lock that process is writing (cut mid-line) is not taken for damage and
    moved aside, since the check runs under DVC's lock."""
    if lock_state == "mid-write":
        truncate_mid_line(project)
    before = (project / "dvc.lock").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_DVC_LOCK, str(project)], cwd=project, env=tool_env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        second = make_dvc_commit(project)
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert second.returncode != 0
    assert (f"tprepro dvc-commit: error: another DVC process holds this project's lock "
            f"(.dvc/tmp/lock)") in second.stderr
    assert "run `make dvc-commit` again once it has ended" in second.stderr
    assert "dvc status` will list every stage" not in second.stderr and "Traceback" not in second.stderr
    assert (project / "dvc.lock").read_bytes() == before
    assert not [path for path in project.iterdir() if path.name.startswith("dvc.lock.damaged-")]

    again = make_dvc_commit(project)  # once the other process has ended, as the error says
    assert again.returncode == 0, again.stderr
    status = dvc(project, "status")
    assert status.returncode == 0 and status.stdout.strip() == "Data and pipelines are up to date.", status
