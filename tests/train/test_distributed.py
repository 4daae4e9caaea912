"""Data-parallel training: 2 gloo processes on CPU follow the single-process loss trajectory
and resume exactly after preemption."""

import signal
import time

import pytest
import torch

from tprepro.train.preemption import REQUEUE_EXIT

from training_project import loss_history, make_workspace, start_training, summary, train, weights

pytestmark = pytest.mark.slow  # `tprepro train` jobs of 1 and 2 processes


def test_two_processes_match_one_process_with_the_same_global_batch(tmp_path):
    runs = {}
    for processes in (1, 2):
        root = make_workspace(tmp_path / f"p{processes}", steps=16, log_every=1, checkpoint_every=8,
                              processes=processes)
        train(root, root / "run")
        runs[processes] = root / "run"
    single, parallel = loss_history(runs[1]), loss_history(runs[2])
    assert [s for s, _ in single] == [s for s, _ in parallel] == list(range(1, 17))
    difference = max(abs(a - b) for (_, a), (_, b) in zip(single, parallel))
    print(f"max |loss(DDP, 2 ranks) - loss(1 process)| over 16 steps: {difference:.3g}")
    assert difference < 1e-5
    assert summary(runs[2])["processes"] == 2
    for key, value in weights(runs[1]).items():
        assert (value - weights(runs[2])[key]).abs().max() < 1e-4, key


def test_preempted_data_parallel_job_resumes_exactly(tmp_path):
    """SIGUSR1 to the launcher reaches both ranks; rank 0's checkpoint resumes both."""
    root = make_workspace(tmp_path, steps=60, log_every=9, checkpoint_every=10, processes=2)
    train(root, root / "full")
    process = start_training(root, root / "cut")
    checkpoint = root / "cut" / "checkpoints" / "checkpoint.pt"
    while not checkpoint.exists():
        assert process.poll() is None, process.communicate()[0][-4000:]
        time.sleep(0.02)
    process.send_signal(signal.SIGUSR1)
    out, _ = process.communicate(timeout=300)
    assert process.returncode == REQUEUE_EXIT, out[-4000:]
    assert out.count("stopped by SIGUSR1") == 2  # one line per rank
    train(root, root / "cut")
    assert summary(root / "cut")["resumed_from"] is not None
    full, cut = weights(root / "full"), weights(root / "cut")
    assert all(torch.equal(full[k], cut[k]) for k in full)
    assert loss_history(root / "cut") == loss_history(root / "full")
