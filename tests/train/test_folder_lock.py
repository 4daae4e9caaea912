"""One trainer per folder: a second `tprepro train` on the checkpoint or model folder of a running one
exits 2 naming it; the lock dies with its holder, even by kill -9; a folder holding the other kind of
output (`--out` and `--checkpoints` swapped) is refused before anything is written in it (real
processes, a real flock, a real MLflow store; issue 46, gap 1)."""

import hashlib
import json
import signal
import socket
import subprocess
import time

import pytest

from tprepro.train.folder_lock import LOCK_FILE, FolderBusy, trainer_lock

from training_project import make_workspace, start_training, train, train_command
from helpers import tool_env

pytestmark = pytest.mark.slow  # `tprepro train` subprocesses


def holder_recorded(lock, process, timeout=180.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, process.communicate()[0][-4000:]
        assert time.monotonic() < deadline, f"{lock} never named its holder"
        try:
            return json.loads(lock.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)


def test_a_second_trainer_on_a_busy_folder_exits_2_naming_the_holder(tmp_path):
    workspace = make_workspace(tmp_path / "ws", steps=100000, checkpoint_every=50, log_every=50)
    run = tmp_path / "run"
    first = start_training(workspace, run)
    try:
        lock = run / "checkpoints" / LOCK_FILE
        holder = holder_recorded(lock, first)
        assert holder["pid"] == first.pid and holder["host"] == socket.gethostname()

        second = start_training(workspace, run)
        out, _ = second.communicate(timeout=300)
        assert second.returncode == 2, out[-4000:]
        assert (f"{run / 'checkpoints'} is already being trained by pid {first.pid} on {socket.gethostname()}, "
                f"started {holder['started']}") in out
        assert "Traceback" not in out
        assert not (run / "checkpoints" / "last_failure.json").exists()  # refused, not a failed training
        assert first.poll() is None  # the holder trains on

        with pytest.raises(FolderBusy):  # the lock is the kernel's, as another process sees it
            with trainer_lock(run / "checkpoints"):
                pass
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
        with trainer_lock(run / "checkpoints"):  # released by the kernel with its holder
            assert json.loads(lock.read_text())["pid"] != first.pid
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(timeout=60)


def contents(folder) -> dict[str, str]:
    """Every file under `folder` with the sha256 of its bytes."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_swapped_out_and_checkpoints_are_refused_naming_the_folder_and_nothing_is_written(tmp_path):
    workspace = make_workspace(tmp_path / "ws", steps=20, checkpoint_every=10, log_every=10)
    run = tmp_path / "run"
    train(workspace, run)  # the published model and its checkpoints
    before = {name: contents(run / name) for name in ("model", "checkpoints")}
    assert "learning_curve.csv" in before["model"] and "checkpoint.pt" in before["checkpoints"]

    swapped = [arg.replace(str(run / "model"), "@M").replace(str(run / "checkpoints"), str(run / "model"))
               .replace("@M", str(run / "checkpoints")) for arg in train_command(workspace, run)]
    process = subprocess.run(swapped, cwd=run, env=tool_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=600)
    assert process.returncode == 2, process.stdout[-4000:]
    assert (f"tprepro train: error: {run / 'model'} is a model folder (it holds model.pt), not a checkpoints "
            f"folder: refusing to train into it as --checkpoints") in process.stdout
    assert "Traceback" not in process.stdout
    assert {name: contents(run / name) for name in ("model", "checkpoints")} == before  # nothing written

    alone = [arg for arg in swapped]  # only the checkpoint folder given as --out (a fresh --checkpoints)
    alone[alone.index("--checkpoints") + 1] = str(tmp_path / "fresh")
    process = subprocess.run(alone, cwd=run, env=tool_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=600)
    assert process.returncode == 2, process.stdout[-4000:]
    assert (f"{run / 'checkpoints'} is a checkpoints folder (it holds checkpoint.pt), not a model folder: "
            f"refusing to train into it as --out") in process.stdout
    assert {name: contents(run / name) for name in ("model", "checkpoints")} == before
    assert not (tmp_path / "fresh").exists()


def test_a_second_trainer_on_the_same_out_with_other_checkpoints_exits_2_naming_the_holder(tmp_path):
    workspace = make_workspace(tmp_path / "ws", steps=100000, checkpoint_every=50, log_every=50)
    run = tmp_path / "run"
    first = start_training(workspace, run)
    try:
        lock = run / "model" / LOCK_FILE
        holder = holder_recorded(lock, first)
        assert holder["pid"] == first.pid and holder["kind"] == "model"

        command = train_command(workspace, run)
        command[command.index("--checkpoints") + 1] = str(tmp_path / "other")
        second = subprocess.run(command, cwd=run, env=tool_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=600)
        assert second.returncode == 2, second.stdout[-4000:]
        assert (f"{run / 'model'} is already being trained by pid {first.pid} on {socket.gethostname()}, "
                f"started {holder['started']} (lock {lock}); one trainer per model folder") in second.stdout
        assert "Traceback" not in second.stdout
        assert not any((tmp_path / "other").glob("*.pt")) and not (tmp_path / "other" / "last_failure.json").exists()
        assert first.poll() is None  # the holder trains on
    finally:
        first.kill()
        first.wait(timeout=60)
