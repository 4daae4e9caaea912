"""Faults in training, done for real: pickle payloads, bit flips and truncation, foreign and
finished checkpoints, a diverging loss. Nothing runs foreign code, nothing finished is lost."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from tprepro.errors import TpreproError
from tprepro.train.callbacks import Callback
from tprepro.train.checkpoint import FORMAT, CheckpointError, load_checkpoint, save_checkpoint
from tprepro.train import kept_states
from tprepro.train.trainer import Diverged, Trainer

from helpers import tool_env
from training_kit import CrashAt, data, make_job  # noqa: F401  (the module-scoped dataset fixture)
from training_project import make_workspace, start_training, summary, train


class Payload:
    """Unpickling this runs `touch <marker>`: what a malicious model file would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_payload_file(path, marker, wrapped: bool) -> None:
    """A model/checkpoint file carrying a pickle payload: a plain torch.save, or one in the
    hashed tprepro format with a valid hash (the payload then hides in the inner bytes)."""
    import hashlib
    import io

    contents = {"model": {"w": torch.zeros(2)}, "step": 1, "evil": Payload(marker)}
    if not wrapped:
        torch.save(contents, path)
        return
    buffer = io.BytesIO()
    torch.save(contents, buffer)
    body = buffer.getvalue()
    torch.save({"format": FORMAT, "sha256": hashlib.sha256(body).hexdigest(),
                "payload": torch.frombuffer(bytearray(body), dtype=torch.uint8)}, path)


def test_the_payload_is_live_under_an_unsafe_load(tmp_path):
    """Control: loading the crafted file the old way (weights_only=False) does run the payload."""
    path, marker = tmp_path / "model.pt", tmp_path / "pwned"
    write_payload_file(path, marker, wrapped=False)
    subprocess.run([sys.executable, "-c", f"import torch; torch.load({str(path)!r}, weights_only=False)"],
                   check=True, env=tool_env())
    assert marker.exists()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("faults"), steps=6, checkpoint_every=3, log_every=2)


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "hashed"])
def test_pickle_payload_in_model_is_refused_by_evaluate(workspace, tmp_path, wrapped):
    model_dir, marker = tmp_path / "models" / "transformer-s1", tmp_path / "pwned"
    model_dir.mkdir(parents=True)
    write_payload_file(model_dir / "model.pt", marker, wrapped)
    (model_dir / "train_metrics.json").write_text(json.dumps({"model": "transformer", "seed": 1, "steps": 1}))
    out = subprocess.run(
        [sys.executable, "-m", "tprepro", "evaluate", "--params", str(workspace / "params.yaml"),
         "--model-dir", str(model_dir),
         "--interpolate", str(tmp_path / "i"), "--extrapolate", str(tmp_path / "e"), "--train", str(tmp_path / "t"),
         "--out", str(tmp_path / "eval.csv")],
        cwd=tmp_path, env=tool_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr[-3000:]
    assert f"{model_dir / 'model.pt'}: refused" in out.stderr
    assert not marker.exists()
    assert not (tmp_path / "eval.csv").exists()


@pytest.mark.slow  # `tprepro train` subprocesses
def test_pickle_payload_in_checkpoint_is_refused_by_train_and_moved_aside(workspace, tmp_path):
    run, marker = tmp_path / "run", tmp_path / "pwned"
    (run / "checkpoints").mkdir(parents=True)
    write_payload_file(run / "checkpoints" / "checkpoint.pt", marker, wrapped=True)
    out = train(workspace, run)
    assert not marker.exists()
    aside = list((run / "checkpoints").glob("checkpoint.pt.corrupt-*"))
    assert len(aside) == 1
    assert f"{run / 'checkpoints' / 'checkpoint.pt'}: refused" in out and str(aside[0]) in out
    assert summary(run)["resumed_from"] is None and summary(run)["steps"] == 6  # restarted from step 0


def checkpoint_bytes(tmp_path) -> tuple[bytes, dict]:
    contents = {"step": 3, "model": {"w": torch.arange(4096, dtype=torch.float32)}, "stream": {"rng": (3, (1, 2), None)}}
    path = tmp_path / "ref.pt"
    save_checkpoint(contents, path)
    return path.read_bytes(), contents


def test_every_bit_flip_is_detected_or_harmless(tmp_path):
    """Single-bit flips across the file: the load fails naming the file, or returns the exact contents."""
    good, contents = checkpoint_bytes(tmp_path)
    path = tmp_path / "checkpoint.pt"
    detected = 0
    for position in range(0, len(good), max(1, len(good) // 300)):
        flipped = bytearray(good)
        flipped[position] ^= 0x10
        path.write_bytes(bytes(flipped))
        try:
            loaded = load_checkpoint(path)
        except CheckpointError as exc:
            assert str(path) in str(exc)
            detected += 1
            continue
        assert loaded["step"] == 3 and torch.equal(loaded["model"]["w"], contents["model"]["w"]), position
    assert detected > 250  # the payload's own bytes are most of the file: every flip there is caught


def test_a_flip_in_the_tensor_bytes_is_a_hash_mismatch(tmp_path):
    good, _ = checkpoint_bytes(tmp_path)
    marker = torch.arange(4096, dtype=torch.float32).numpy().tobytes()[4000:4016]
    position = good.index(marker) + 5
    flipped = bytearray(good)
    flipped[position] ^= 0x01
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match=f"{path}: corrupt checkpoint: content sha256"):
        load_checkpoint(path)


@pytest.mark.parametrize("keep", [0.0, 0.3, 0.9, 0.999])
def test_a_truncated_checkpoint_is_named(tmp_path, keep):
    good, _ = checkpoint_bytes(tmp_path)
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(good[: int(len(good) * keep)])
    with pytest.raises(CheckpointError, match=str(path)):
        load_checkpoint(path)


def test_a_file_without_content_hash_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"model": {"w": torch.ones(2)}}, path)
    with pytest.raises(CheckpointError, match=f"{path}: not a {FORMAT} file"):
        load_checkpoint(path)


def test_a_corrupt_checkpoint_on_resume_is_moved_aside_and_training_restarts(data, tmp_path, capsys):  # noqa: F811
    ckpt = tmp_path / "ckpt.pt"
    Trainer(make_job(data, 6), ckpt).fit()
    good = ckpt.read_bytes()
    ckpt.write_bytes(good[: len(good) // 2])
    trainer = Trainer(make_job(data, 8), ckpt)
    assert trainer.resumed_from is None
    aside = list(tmp_path.glob("ckpt.pt.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == good[: len(good) // 2]  # kept as it was
    warning = capsys.readouterr().err
    assert f"WARNING: {ckpt}" in warning and str(aside[0]) in warning
    trainer.fit()
    assert load_checkpoint(ckpt)["step"] == 8


@pytest.mark.parametrize("change", ["seed", "fewer_steps"])
def test_a_mismatched_checkpoint_is_moved_aside_never_overwritten(data, tmp_path, capsys, change):  # noqa: F811
    """A checkpoint of a run in progress is moved aside; a finished run's, kept already
    (train/kept_states.py), stays kept in finished/ instead of piling up beside it."""
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        Trainer(make_job(data, 9, checkpoint_every=6), ckpt, callbacks=[CrashAt(8)]).fit()  # in progress: step 6
    original = ckpt.read_bytes()
    other = make_job(data, 8, seed=12) if change == "seed" else make_job(data, 4)
    trainer = Trainer(other, ckpt)
    assert trainer.resumed_from is None
    aside = list(tmp_path.glob("ckpt.pt.mismatch-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == original
    warning = capsys.readouterr().err
    assert f"WARNING: {ckpt}" in warning and str(aside[0]) in warning
    trainer.fit()  # its own checkpoint; the moved one stays
    assert aside[0].read_bytes() == original

    finished = tmp_path / "finished"
    Trainer(make_job(data, 8), finished / "ckpt.pt").fit()
    original = (finished / "ckpt.pt").read_bytes()
    trainer = Trainer(make_job(data, 8, seed=12) if change == "seed" else make_job(data, 4), finished / "ckpt.pt")
    assert trainer.resumed_from is None and not list(finished.glob("ckpt.pt.*"))
    assert "it stays kept in finished/" in capsys.readouterr().err
    trainer.fit()
    kept = kept_states.state_folder(finished, make_job(data, 8).fingerprint, 8) / "ckpt.pt"
    assert kept.read_bytes() == original


class PoisonAfterCheckpoint(Callback):
    """Sets one weight to NaN right after the checkpoint at `step` (a real divergence from then on)."""

    def __init__(self, trainer_ref: list, step: int):
        self.trainer_ref, self.step = trainer_ref, step

    def on_checkpoint(self, step, path):
        if step == self.step:
            with torch.no_grad():
                next(self.trainer_ref[0].model.parameters()).view(-1)[0] = math.nan


def test_non_finite_loss_stops_training_and_keeps_the_last_good_checkpoint(data, tmp_path):  # noqa: F811
    ckpt = tmp_path / "ckpt.pt"
    ref: list = []
    trainer = Trainer(make_job(data, 12), ckpt, callbacks=[PoisonAfterCheckpoint(ref, 4)])
    ref.append(trainer)
    with pytest.raises(Diverged, match=r"diverged by step 6 \(loss nan\).*last good checkpoint .*ckpt.pt is kept"):
        trainer.fit()
    kept = load_checkpoint(ckpt)
    assert kept["step"] == 4
    assert all(torch.isfinite(t).all() for t in kept["model"].values())


def test_infinite_learning_rate_fails_before_writing_a_model(data, tmp_path):  # noqa: F811
    ckpt = tmp_path / "ckpt.pt"
    trainer = Trainer(make_job(data, 12, lr=math.inf), ckpt)
    with pytest.raises(Diverged, match=r"diverged by step \d+ \((loss (nan|inf)|non-finite weights)\)"):
        trainer.fit()
    assert not ckpt.exists()  # the first checkpoint (step 4) would already hold NaN weights
    assert isinstance(Diverged("x"), TpreproError)  # the CLI reports it as one line, exit status 2


@pytest.mark.slow  # `tprepro train` subprocesses
def test_a_finished_run_reinvoked_is_a_no_op_that_keeps_its_metrics(workspace, tmp_path):
    run = tmp_path / "run"
    train(workspace, run)
    first = summary(run)
    model_bytes = (run / "model" / "model.pt").read_bytes()
    assert math.isfinite(first["final_loss"])

    out = train(workspace, run)  # re-invoked with everything in place
    assert "nothing to do" in out
    assert summary(run) == first
    assert (run / "model" / "model.pt").read_bytes() == model_bytes

    # Outputs gone (as after Snakemake removed them), the final checkpoint still there.
    (run / "model" / "model.pt").unlink()
    (run / "model" / "train_metrics.json").unlink()
    out = train(workspace, run)
    assert "nothing to train" in out
    again = summary(run)
    for key in ("steps", "final_loss", "wall_seconds", "resumed_from", "parameters"):
        assert again[key] == first[key], key
    assert load_checkpoint(run / "model" / "model.pt")["model"].keys() == load_checkpoint(
        run / "checkpoints" / "checkpoint.pt")["model"].keys()
    with __import__("sqlite3").connect(run / "mlflow.db") as db:
        finals = db.execute("SELECT value FROM metrics WHERE key = 'train.final_loss'").fetchall()
    assert finals and all(math.isfinite(v) for (v,) in finals)


@pytest.mark.slow  # `tprepro train` subprocesses
def test_diverging_train_command_exits_2_naming_step_and_loss(tmp_path):
    """`tprepro train` end to end with a loss that goes non-finite: exit 2, one line, no model."""
    root = make_workspace(tmp_path / "ws", steps=6, checkpoint_every=3, log_every=2, lr=1.0e30, grad_clip=1.0e30)
    process = start_training(root, tmp_path / "run")
    out, _ = process.communicate(timeout=600)
    assert process.returncode == 2, out[-3000:]
    assert "tprepro train: error:" in out and "diverged by step" in out
    assert not (tmp_path / "run" / "model" / "model.pt").exists()


REQUEUE_SNAKEFILE = """
P = {{"mlflow": {{"prefix": "requeue", "log_models": True}}}}
include: "{rules}/mlflow.smk"

TRAIN = ("tprepro train --params {ws}/params.yaml --seed 1 --train {ws}/data/train-easy --vocab {ws}/vocab.json"
         " --heldout {ws}/data/interpolate")

rule all:
    input: "preempted/model/model.pt", "broken/model/model.pt"

rule other:
    output: "other.txt"
    shell: "echo finished > {{output}}"

# history/: every attempt's output (Snakemake clears a failed attempt's log: files).
# Fails for good (unknown model): must not be trained again by the remaining attempts.
rule broken:
    input: "other.txt"
    output: "broken/model/model.pt"
    retries: 3
    shell: TRAIN + " --model nosuch --out broken/model --checkpoints broken/checkpoints >> history/broken 2>&1"

# Preempted by a real SIGTERM once it has a checkpoint (exit 75): requeued, resumes, finishes.
rule preempted:
    input: "other.txt"
    output: "preempted/model/model.pt"
    retries: 3
    resources: attempt=lambda wildcards, attempt: attempt
    shell:
        TRAIN + " --model transformer --out preempted/model --checkpoints preempted/checkpoints >> history/preempted 2>&1 &"
        " pid=$!; if [ {{resources.attempt}} -eq 1 ]; then"
        " while [ ! -e preempted/checkpoints/checkpoint.pt ] && kill -0 $pid 2>/dev/null; do sleep 0.1; done;"
        " kill -TERM $pid; fi; wait $pid"
"""


@pytest.mark.slow
def test_snakemake_requeues_preemption_only_and_keeps_finished_outputs(tmp_path):
    from helpers import REPO

    ws = make_workspace(tmp_path / "ws", steps=120, checkpoint_every=10, log_every=10)
    root = tmp_path / "wf"
    (root / "history").mkdir(parents=True)
    (root / "Snakefile").write_text(REQUEUE_SNAKEFILE.format(rules=REPO / "workflow" / "rules", ws=ws))
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--keep-going"], cwd=root,
                            env=tool_env(), capture_output=True, text=True, timeout=900)
    assert result.returncode != 0  # the broken job fails the invocation
    broken = (root / "history" / "broken").read_text()
    assert broken.count("tprepro train: error:") == 1, broken  # trained (and failed) once
    assert broken.count("tprepro train: not retried") == 3, broken  # the other attempts exit at once
    assert "no such model" in broken.split("not retried", 1)[1]  # each names the original error
    preempted = (root / "history" / "preempted").read_text()
    assert "stopped by SIGTERM" in preempted, preempted
    metrics = json.loads((root / "preempted" / "model" / "train_metrics.json").read_text())
    assert metrics["steps"] == 120 and metrics["resumed_from"] is not None  # requeued, resumed
    assert (root / "other.txt").read_text() == "finished\n"  # finished work of other rules stays
