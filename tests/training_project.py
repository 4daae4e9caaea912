"""A minimal training workspace for `tprepro train` subprocesses: shards, vocabulary, params."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import torch

from helpers import arithmetic_rows, load_default_params, tool_env, write_dataset, write_params
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.train.checkpoint import load_checkpoint

MODULE = "arithmetic__add_or_sub"


def make_workspace(root: Path, **train) -> Path:
    """root/params.yaml, root/data/{train-easy,interpolate}/<MODULE>, root/vocab.json; `train` overrides train:."""
    dataset = open_dataset(write_dataset(root / "data" / "train-easy" / MODULE,
                                         arithmetic_rows(600, seed=3), rows_per_shard=100))
    write_dataset(root / "data" / "interpolate" / MODULE, arithmetic_rows(40, seed=4, split="interpolate"),
                  rows_per_shard=40)
    build_vocab([dataset]).save(root / "vocab.json")
    params = load_default_params()
    params["grid"].update(modules=[MODULE], models=["transformer"])
    params["models"] = {"transformer": {"preset": "transformer_tiny", "d_model": 16, "n_heads": 2, "d_ff": 32,
                                        "n_encoder_layers": 1, "n_decoder_layers": 1}}
    # prefetch 2: the background thread CUDA runs use (auto makes none on CPU), the harder path to resume exactly
    params["train"].update(batch_size=8, warmup_steps=5, threads=1, device="cpu", prefetch=2, **train)
    write_params(root / "params.yaml", params)
    return root


def train_command(workspace: Path, run: Path, seed: int = 1) -> list[str]:
    return [sys.executable, "-m", "tprepro", "train", "--params", str(workspace / "params.yaml"),
            "--model", "transformer", "--seed", str(seed), "--train", str(workspace / "data" / "train-easy"),
            "--vocab", str(workspace / "vocab.json"), "--out", str(run / "model"),
            "--checkpoints", str(run / "checkpoints"), "--heldout", str(workspace / "data" / "interpolate")]


def dvc_training_project(root: Path, seed: int = 1, **train) -> Path:
    """A git and DVC project in `root` (a `make_workspace`) whose one stage, `train`, is `tprepro train` of
    run/model (checkpoints in run/checkpoints, MLflow in root) reading the `train` params section."""
    make_workspace(root, **train)
    command = " ".join(["tprepro", *train_command(root, root / "run", seed)[3:]]).replace(f"{root}/", "")
    (root / "dvc.yaml").write_text(f"stages:\n  train:\n    cmd: {command}\n    deps: [data, vocab.json]\n"
                                   f"    params: [train]\n    outs: [run/model]\n")
    (root / ".gitignore").write_text("/run/checkpoints\n/mlflow.db\n/mlartifacts\n/logs\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=root, check=True, env=tool_env())
    return root


def start_training(workspace: Path, run: Path, **env) -> subprocess.Popen:
    """`tprepro train` in `run` (its own local MLflow store there)."""
    run.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(train_command(workspace, run), cwd=run, env=tool_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def train(workspace: Path, run: Path, **env) -> str:
    process = start_training(workspace, run, **env)
    out, _ = process.communicate(timeout=600)
    assert process.returncode == 0, out[-4000:]
    return out


def trained_run(root: Path, steps: int, log_every: int) -> Path:
    """A finished `tprepro train` run of `steps` steps under `root` (checkpointed once, at its end): its run folder,
    the model in `<run>/model`."""
    workspace = make_workspace(root / "workspace", steps=steps, checkpoint_every=steps, log_every=log_every)
    train(workspace, root / "run")
    return root / "run"


def weights(run: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(run / "model" / "model.pt")["model"]


def summary(run: Path) -> dict:
    return json.loads((run / "model" / "train_metrics.json").read_text())


def loss_history(run: Path) -> list[tuple[int, float]]:
    """(step, loss) as logged to the run directory's local MLflow store."""
    with sqlite3.connect(run / "mlflow.db") as db:
        return db.execute("SELECT step, value FROM metrics WHERE key = 'loss' ORDER BY step").fetchall()
