"""Preemption: a real signal mid-training checkpoints and exits 75; the re-run resumes and ends
exactly where an uninterrupted run ends (weights, final metrics, loss history)."""

import signal
import time

import pytest
import torch

from tprepro.train.checkpoint import load_checkpoint
from tprepro.train.preemption import REQUEUE_EXIT

from training_project import loss_history, make_workspace, start_training, summary, train, weights

pytestmark = pytest.mark.slow  # six `tprepro train` subprocesses

STEPS = 240


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = make_workspace(tmp_path_factory.mktemp("preempt"), steps=STEPS, checkpoint_every=10, log_every=9)
    train(root, root / "uninterrupted")
    return root


def wait_for(path, process, timeout=180.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()[0][-4000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1], ids=["SIGTERM", "SIGUSR1"])
def test_signal_checkpoints_requeues_and_resume_equals_uninterrupted(workspace, signum):
    run = workspace / signal.Signals(signum).name
    process = start_training(workspace, run)
    wait_for(run / "checkpoints" / "checkpoint.pt", process)
    process.send_signal(signum)
    out, _ = process.communicate(timeout=300)
    assert process.returncode == REQUEUE_EXIT, out[-4000:]
    assert f"stopped by {signal.Signals(signum).name}" in out
    assert not (run / "model" / "model.pt").exists()
    stopped_at = load_checkpoint(run / "checkpoints" / "checkpoint.pt")["step"]
    assert 10 <= stopped_at < STEPS

    train(workspace, run)  # the requeued attempt
    full, resumed = summary(workspace / "uninterrupted"), summary(run)
    assert resumed["resumed_from"] == stopped_at
    for key in ("steps", "final_loss", "parameters"):
        assert resumed[key] == full[key], key
    expected, got = weights(workspace / "uninterrupted"), weights(run)
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    assert loss_history(run) == loss_history(workspace / "uninterrupted")  # one MLflow run, same history


def test_ctrl_c_checkpoints_as_sigterm_does(workspace):
    """SIGINT (Ctrl-C) takes SIGTERM's path, whose resume the test above checks: a checkpoint at a step
    boundary, exit 75, no KeyboardInterrupt."""
    run = workspace / "SIGINT"
    process = start_training(workspace, run)
    wait_for(run / "checkpoints" / "checkpoint.pt", process)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=300)
    assert process.returncode == REQUEUE_EXIT, out[-4000:]
    assert "stopped by SIGINT" in out and "KeyboardInterrupt" not in out
    assert 10 <= load_checkpoint(run / "checkpoints" / "checkpoint.pt")["step"] < STEPS
