"""One trainer per checkpoint folder: a second `tprepro train` on the folder of a running one exits 2
naming it; the lock dies with its holder, even by kill -9 (real processes, a real flock)."""

import json
import signal
import socket
import subprocess
import time

import pytest

from tprepro.train.folder_lock import LOCK_FILE, FolderBusy, trainer_lock

from training_project import make_workspace, start_training

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
