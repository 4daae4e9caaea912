"""Parent runs left RUNNING by a killed invocation: the next invocation marks them KILLED, with when and
why; those of an invocation still running stay open; a failed invocation closes its own as FAILED. Real
Snakemake invocations, a real kill -9, a real failing job, one real MLflow store (issues 37 and 54)."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, tool_env

pytestmark = pytest.mark.slow  # three Snakemake invocations

SNAKEFILE = """
P = {{"mlflow": {{"prefix": "parents", "log_models": True}}}}
include: "{rules}/mlflow.smk"

rule all:
    output: "{output}"
    shell: "{shell}"
"""
EXPERIMENTS = 4  # mathematics, n2f, summarization, two-variable: one parent each


def write_snakefile(root: Path, output: str, shell: str) -> None:
    """root/Snakefile: the parent runs' rules and one job writing `output` by `shell`."""
    root.mkdir()
    (root / "Snakefile").write_text(SNAKEFILE.format(rules=REPO / "workflow" / "rules", output=output, shell=shell))


def invocation(root: Path, store: Path, seconds: int) -> subprocess.Popen:
    """Snakemake in `root` (its own session, so that killing it kills its job too) on the shared store."""
    write_snakefile(root, "key.txt",
                    f"echo $TPREPRO_INVOCATION > {{output}}.tmp && mv {{output}}.tmp {{output}} && sleep {seconds}")
    return subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=root,
                            env=tool_env(MLFLOW_TRACKING_URI=f"sqlite:///{store}"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def started(root: Path, process: subprocess.Popen, timeout: float = 300) -> str:
    """The invocation's key, once its parents are open and its job runs."""
    deadline = time.monotonic() + timeout
    while not (root / "key.txt").exists():
        assert process.poll() is None, process.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)
    return (root / "key.txt").read_text().strip()


def parents(store: Path, key: str) -> list[tuple[str, str, str | None]]:
    """(status, lifecycle stage, tprepro.closed tag) of invocation `key`'s parent runs."""
    with sqlite3.connect(store) as db:
        return db.execute("SELECT r.status, r.lifecycle_stage, c.value FROM runs r"
                          " JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = 'tprepro.invocation'"
                          " LEFT JOIN tags c ON c.run_uuid = r.run_uuid AND c.key = 'tprepro.closed'"
                          " WHERE t.value = ?", (key,)).fetchall()


def end_times(store: Path, key: str) -> list[int | None]:
    """The end time of each of invocation `key`'s parent runs."""
    with sqlite3.connect(store) as db:
        return [end for (end,) in db.execute("SELECT end_time FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid"
                                              " WHERE t.key = 'tprepro.invocation' AND t.value = ?", (key,))]


def test_the_next_invocation_closes_the_parents_of_a_killed_one_and_not_of_a_live_one(tmp_path):
    store = tmp_path / "mlflow.db"
    killed = invocation(tmp_path / "killed", store, seconds=600)
    alive = None
    try:
        killed_key = started(tmp_path / "killed", killed)
        alive = invocation(tmp_path / "alive", store, seconds=600)
        alive_key = started(tmp_path / "alive", alive)
        os.killpg(killed.pid, signal.SIGKILL)  # Snakemake and its job: no onerror runs
        killed.wait(timeout=60)
        assert parents(store, killed_key) == [("RUNNING", "active", None)] * EXPERIMENTS

        following = invocation(tmp_path / "next", store, seconds=0)
        out, _ = following.communicate(timeout=600)
        assert following.returncode == 0, out[-3000:]
        next_key = (tmp_path / "next" / "key.txt").read_text().strip()

        closed = parents(store, killed_key)
        assert [status for status, _, _ in closed] == ["KILLED"] * EXPERIMENTS
        host, pid = killed_key.split(":")[:2]
        assert pid == str(killed.pid)
        for _, _, why in closed:  # when, by whom and why
            assert why.startswith(time.strftime("%Y-%m-%dT", time.gmtime()))
            assert f"closed by invocation {next_key}" in why
            assert f"(pid {pid} on {host}) had ended without closing it" in why
        assert all(end is not None for end in end_times(store, killed_key))
        assert parents(store, alive_key) == [("RUNNING", "active", None)] * EXPERIMENTS  # still running: left open
        assert alive.poll() is None
    finally:
        for process in (killed, alive):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=60)


def hand_training(workspace: Path, run: Path, store: Path, **train) -> subprocess.Popen:
    """`tprepro train` typed in a shell: its own process group (so its own invocation), the shared store."""
    from training_project import train_command

    run.mkdir(parents=True)
    return subprocess.Popen(train_command(workspace, run), cwd=run, env=tool_env(MLFLOW_TRACKING_URI=f"sqlite:///{store}"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def hand_parents(store: Path) -> dict[str, tuple[str, str | None]]:
    """Each parent run's invocation key: (status, tprepro.closed tag)."""
    with sqlite3.connect(store) as db:
        return {key: (status, why) for key, status, why in db.execute(
            "SELECT t.value, r.status, c.value FROM runs r"
            " JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = 'tprepro.invocation'"
            " LEFT JOIN tags c ON c.run_uuid = r.run_uuid AND c.key = 'tprepro.closed'")}


def test_the_parent_of_a_successful_hand_run_ends_finished_and_of_a_killed_one_killed(tmp_path):
    """Stages run by hand (no Snakemake to close their parent): the next invocation closes the parent of
    one that succeeded as FINISHED (it was KILLED, issue 46), of one killed mid-run as KILLED."""
    from training_project import make_workspace

    store = tmp_path / "mlflow.db"
    short = make_workspace(tmp_path / "short", steps=10, checkpoint_every=10, log_every=5)
    long = make_workspace(tmp_path / "long", steps=100000, checkpoint_every=5, log_every=5)
    done = hand_training(short, tmp_path / "done", store)
    out, _ = done.communicate(timeout=600)
    assert done.returncode == 0, out[-3000:]
    [(done_key, (status, _))] = hand_parents(store).items()
    assert status == "RUNNING" and done_key.split(":")[1] == str(done.pid)  # its own invocation, now ended

    killed = hand_training(long, tmp_path / "killed", store)
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "killed" / "checkpoints" / "checkpoint.pt").exists():  # its MLflow run is open
            assert killed.poll() is None, killed.communicate()[0][-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=60)
    parents_now = hand_parents(store)
    killed_key = next(key for key in parents_now if key != done_key)
    assert parents_now[done_key][0] == "FINISHED"  # closed by the second run as it opened its parent
    assert "had ended after its 1 run(s) all finished" in parents_now[done_key][1]

    following = hand_training(short, tmp_path / "next", store)
    out, _ = following.communicate(timeout=600)
    assert following.returncode == 0, out[-3000:]
    status, why = hand_parents(store)[killed_key]
    assert status == "KILLED" and "had ended without closing it" in why


def test_a_failed_invocation_closes_its_parents_as_failed(tmp_path):
    """A job whose command is not found (exit 127, as `tprepro` off PATH did): Snakemake's onerror closes the
    invocation's parent runs as FAILED, with an end time; idle (no job's run became their child), they are
    also deleted. Before, deleting one left it RUNNING (issue 54: 4 parents RUNNING after such a run)."""
    store, root = tmp_path / "mlflow.db", tmp_path / "failing"
    write_snakefile(root, "never.txt", "echo $TPREPRO_INVOCATION > key.txt; exit 127")
    failed = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=root, capture_output=True,
                            text=True, env=tool_env(MLFLOW_TRACKING_URI=f"sqlite:///{store}"), timeout=600)
    assert failed.returncode != 0 and "exit code" in failed.stdout + failed.stderr, failed.stderr[-3000:]
    key = (root / "key.txt").read_text().strip()
    assert parents(store, key) == [("FAILED", "deleted", None)] * EXPERIMENTS
    ends = end_times(store, key)
    assert len(ends) == EXPERIMENTS and None not in ends

