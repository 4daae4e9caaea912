"""A resume follows the experiment (issue 54): a finished training keeps its final state, and a later
training under the same settings resumes from the furthest kept state within its steps, whatever
checkpoint.pt holds; the kept states cost one hard link while current and are pruned to KEEP."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch

from tprepro.train import kept_states
from tprepro.train.callbacks import Callback
from tprepro.train.checkpoint import load_checkpoint
from tprepro.train.trainer import Trainer

from helpers import tool_env
from training_kit import assert_same_weights, data, make_job  # noqa: F401  (the module-scoped data fixture)
from training_project import dvc_training_project, make_workspace, train


class Losses(Callback):
    def __init__(self):
        self.logged = {}

    def on_log(self, step, metrics):
        self.logged[step] = metrics["loss"]


def fit(job, checkpoint):
    losses = Losses()
    trainer = Trainer(job, checkpoint, callbacks=[losses])
    trainer.fit()
    return trainer, losses.logged


def test_a_shorter_extension_resumes_from_the_kept_state_and_equals_an_uninterrupted_run(data, tmp_path):  # noqa: F811
    """6 steps, then 10 (checkpoint.pt: step 10), then 8, as after `dvc exp apply` of the 6-step run: the
    8-step training resumes at 6, not 0, and ends with the uninterrupted 8-step run's weights, Adam moments
    and loss at step 8 (6 is a logging step); checkpoint.pt, a kept state, is not moved aside."""
    ckpt = tmp_path / "run" / "ckpt.pt"
    fit(make_job(data, 6), ckpt)
    fit(make_job(data, 10), ckpt)
    losses = Losses()
    resumed = Trainer(make_job(data, 8), ckpt, callbacks=[losses])
    assert resumed.resumed_from == 6
    resumed.fit()
    assert sorted(p.name for p in ckpt.parent.iterdir()) == ["ckpt.pt", "finished"]  # nothing moved aside
    fingerprint = make_job(data, 8).fingerprint
    assert {p.name for p in (ckpt.parent / "finished").iterdir()} == {f"{fingerprint[:16]}-{step}" for step in (6, 8, 10)}

    uninterrupted, logged = fit(make_job(data, 8), tmp_path / "full" / "ckpt.pt")
    assert_same_weights(uninterrupted.model, resumed.model)
    for full, res in zip(uninterrupted.optimizer.state.values(), resumed.optimizer.state.values()):
        assert torch.equal(full["exp_avg"], res["exp_avg"]) and torch.equal(full["exp_avg_sq"], res["exp_avg_sq"])
    assert losses.logged == {8: logged[8]}


def test_a_kept_state_is_a_link_while_current_and_the_newest_keep_survive(data, tmp_path):  # noqa: F811
    ckpt = tmp_path / "ckpt.pt"
    fit(make_job(data, 2), ckpt)
    first = kept_states.state_folder(tmp_path, make_job(data, 2).fingerprint, 2) / "ckpt.pt"
    assert os.path.samefile(first, ckpt)  # no second copy of the bytes
    kept_bytes = first.read_bytes()
    fit(make_job(data, 4), ckpt)  # rewrites checkpoint.pt: the kept state keeps its bytes
    assert first.read_bytes() == kept_bytes and not os.path.samefile(first, ckpt)
    for steps in range(6, 2 * (kept_states.KEEP + 2), 2):  # each extends the last: KEEP + 1 finished states in all
        fit(make_job(data, steps), ckpt)
    assert not first.exists()
    steps_kept = sorted(int(p.name.rsplit("-", 1)[1]) for p in (tmp_path / "finished").iterdir())
    newest = list(range(4, 2 * (kept_states.KEEP + 2), 2))[-kept_states.KEEP:]
    assert steps_kept == newest

    resumed = Trainer(make_job(data, newest[0] + 1), ckpt)  # resumes from the oldest kept: it becomes the newest
    assert resumed.resumed_from == newest[0]
    resumed.fit()
    steps_kept = sorted(int(p.name.rsplit("-", 1)[1]) for p in (tmp_path / "finished").iterdir())
    assert steps_kept == sorted([newest[0], newest[0] + 1, *newest[2:]])


def test_a_corrupt_kept_state_is_moved_aside_and_training_restarts(data, tmp_path, capsys):  # noqa: F811
    ckpt = tmp_path / "ckpt.pt"
    fit(make_job(data, 6), ckpt)
    fit(make_job(data, 10), ckpt)  # checkpoint.pt: step 10, another file than the kept step-6 state
    kept = kept_states.state_folder(tmp_path, make_job(data, 6).fingerprint, 6) / "ckpt.pt"
    kept.write_bytes(kept.read_bytes()[:1000])
    trainer = Trainer(make_job(data, 8), ckpt)
    assert trainer.resumed_from is None
    assert f"WARNING: {kept}" in capsys.readouterr().err and list(kept.parent.glob("ckpt.pt.corrupt-*"))
    trainer.fit()
    assert kept_states.furthest(ckpt, make_job(data, 8).fingerprint, 8)[0] == 8


def dvc(root, *args) -> str:
    result = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, env=tool_env(), capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, f"dvc {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def git(root, *args) -> None:
    subprocess.run(["git", "-c", "user.name=tprepro tests", "-c", "user.email=tests@tprepro.invalid", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.mark.slow  # four `tprepro train` runs under real DVC experiments (~2 min on 2 cores)
def test_dvc_exp_apply_then_more_steps_resumes_from_the_applied_experiment(tmp_path):
    """`dvc exp save -n baseline` (12 steps); `dvc exp run -S train.steps=24`; `dvc exp apply baseline`;
    `dvc exp run -S train.steps=18`: the training resumes at step 12 (before: checkpoint.pt held step 24 and
    training started over) and its model, final loss and learning curve are those of an uninterrupted
    18-step run (12 is a logging and checkpoint step)."""
    root = dvc_training_project(tmp_path / "project", steps=12, log_every=3, checkpoint_every=6)
    dvc(root, "repro")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    dvc(root, "exp", "save", "-n", "baseline")
    dvc(root, "exp", "run", "-n", "longer", "-S", "train.steps=24")
    assert json.loads((root / "run/model/train_metrics.json").read_text())["steps"] == 24
    dvc(root, "exp", "apply", "baseline")
    out = dvc(root, "exp", "run", "-n", "between", "-S", "train.steps=18")
    assert "resuming at step 12 of 18" in out, out[-3000:]
    progress = (root / "logs/progress/tprepro-mathematics/transformer-s1.log").read_text().splitlines()
    assert "resuming at step 12 of 18" in [line for line in progress if "training on" in line][-1]
    resumed = json.loads((root / "run/model/train_metrics.json").read_text())
    assert (resumed["steps"], resumed["resumed_from"]) == (18, 12)

    full = make_workspace(tmp_path / "full", steps=18, log_every=3, checkpoint_every=6)
    train(full, full / "run")
    uninterrupted = json.loads((full / "run/model/train_metrics.json").read_text())
    assert resumed["final_loss"] == uninterrupted["final_loss"]
    a, b = (load_checkpoint(path)["model"] for path in (root / "run/model/model.pt", full / "run/model/model.pt"))
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)
    curves = [pd.read_csv(folder / "run/model/learning_curve.csv") for folder in (root, full)]
    pd.testing.assert_frame_equal(*curves)
