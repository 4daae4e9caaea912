"""End to end: tiny models trained through the CLI, then every interpret-* command on them, outputs on
disk and as MLflow artifacts of the analysed training runs (slow: a few dozen seconds of CPU)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers import arithmetic_rows, load_default_params, micro_n2f, micro_two_variable, tool_env, write_dataset
from helpers import write_params
from tprepro.data.shards import open_dataset

pytestmark = pytest.mark.slow

MODULE = "arithmetic__add_or_sub"
MICRO = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_encoder_layers": 2, "n_decoder_layers": 1}


def tprepro(root: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "tprepro", *args, "--params", "params.yaml"], cwd=root,
                            env=tool_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def artifacts(root: Path, model_dir: Path) -> set[str]:
    """Paths of the interpret artifacts of the training run that wrote `model_dir`."""
    from mlflow.tracking import MlflowClient

    summary = json.loads((model_dir / "train_metrics.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    found, folders = set(), ["interpret"]
    with contextlib.chdir(root):  # artifact locations are project-relative
        while folders:
            for item in client.list_artifacts(summary["mlflow_run_id"], folders.pop()):
                (folders.append(item.path) if item.is_dir else found.add(item.path))
    return found


def test_mathematics_runs_with_a_tpt_d_model_through_the_cli(tmp_path):
    root = tmp_path
    data = root / "data" / "mathematics"
    write_dataset(data / "train-easy" / MODULE, arithmetic_rows(300, seed=1), rows_per_shard=100)
    write_dataset(data / "interpolate" / MODULE, arithmetic_rows(120, seed=2, split="interpolate"), rows_per_shard=50)
    params = load_default_params()
    params["grid"].update(modules=[MODULE], models=["transformer", "tp_transformer", "tpt_d"])
    params["models"] = {"transformer": {"preset": "transformer_tiny", **MICRO},
                        "tp_transformer": {"preset": "tp_transformer_tiny", **MICRO},
                        "tpt_d": {"preset": "tpt_d_tiny", **MICRO, "d_role": 8, "n_roles": 6}}
    params["train"].update(steps=20, batch_size=16, warmup_steps=2, checkpoint_every=10, log_every=10, device="cpu")
    params["interpret"].update(module=MODULE)
    params["interpret"]["role_clusters"].update(n=12, k=4)
    params["interpret"]["head_reconstruction"].update(n=20)
    params["interpret"]["one_hotness"].update(n=10)
    write_params(root / "params.yaml", params)
    tprepro(root, "vocab", "--train", "data/mathematics/train-easy", "--out", "data/vocab.json")
    for name in params["grid"]["models"]:
        tprepro(root, "train", "--model", name, "--seed", "1", "--train", "data/mathematics/train-easy",
                "--out", f"mathematics/models/{name}-s1", "--checkpoints", f"mathematics/checkpoints/{name}-s1")
        tprepro(root, "interpret-mathematics", "--model-dir", f"mathematics/models/{name}-s1",
                "--out", f"mathematics/interpret/{name}-s1")
    out = root / "mathematics" / "interpret"
    found = {name: {p.name for p in (out / f"{name}-s1").iterdir()} for name in params["grid"]["models"]}
    common = {"analyses.json", "attention.json", "attention.png", "head_reconstruction.json"}
    assert found["transformer"] == common
    assert found["tp_transformer"] == common | {"role_clusters.csv", "role_clusters.png"}
    assert found["tpt_d"] == common | {"one_hotness.csv", "one_hotness.png"}
    one_hot = pd.read_csv(out / "tpt_d-s1" / "one_hotness.csv")
    assert one_hot[["layer", "attention"]].values.tolist() == [
        ["enc0", "self"], ["enc1", "self"], ["dec0", "self"], ["dec0", "cross"]]
    assert one_hot["share_above"].between(0, 1).all() and (one_hot["distributions"] > 0).all()
    clusters = pd.read_csv(out / "tp_transformer-s1" / "role_clusters.csv")
    assert 1 <= len(clusters) <= 4 and clusters["size"].sum() > 12 * 10

    tprepro(root, "interpret-reconstruction", "--csv", "results/interpret/head_reconstruction.csv",
            "--md", "results/interpret/head_reconstruction.md", "--figure", "results/interpret/head_reconstruction.png")
    table = pd.read_csv(root / "results" / "interpret" / "head_reconstruction.csv")
    assert table["model"].tolist() == ["transformer-s1", "tp_transformer-s1", "tpt_d-s1"]
    assert table[["head_0", "head_1"]].mean(axis=1).round(6).tolist() == table["mean"].round(6).tolist()
    assert (table["mean"] > 0).all() and (root / "results" / "interpret" / "head_reconstruction.png").stat().st_size > 0

    models = root / "mathematics" / "models"
    assert {"interpret/tpt_d-s1/one_hotness.png", "interpret/tpt_d-s1/attention.png",
            "interpret/head_reconstruction.csv"} <= artifacts(root, models / "tpt_d-s1")
    assert "interpret/tp_transformer-s1/role_clusters.png" in artifacts(root, models / "tp_transformer-s1")


def test_two_variable_aut_and_tp_n2f_through_the_cli(tmp_path):
    root = tmp_path
    params = micro_n2f(micro_two_variable(load_default_params()), ("algolisp",))
    params["two_variable"]["train"]["device"] = "cpu"
    params["two_variable"]["interpret"]["ponder"].update(n=40)
    params["n2f"]["interpret"]["unbinding"].update(n=16)
    write_params(root / "params.yaml", params)

    tprepro(root, "two-variable-data", "--out", "data/two_variable", "--vocab", "data/two_variable/vocab.json")
    tprepro(root, "two-variable-train", "--model", "aut", "--seed", "1", "--out", "two_variable/models/aut-s1",
            "--checkpoints", "two_variable/checkpoints/aut-s1")
    tprepro(root, "interpret-two-variable", "--model-dir", "two_variable/models/aut-s1",
            "--out", "two_variable/interpret/aut-s1")
    out = root / "two_variable" / "interpret" / "aut-s1"
    assert {p.name for p in out.iterdir()} == {"analyses.json", "attention.json", "attention.png",
                                                "ponder_map.png", "ponder_by_type.csv"}
    by_type = pd.read_csv(out / "ponder_by_type.csv")
    test_rows = open_dataset(root / "data" / "two_variable" / "test").rows  # 24: fewer than asked
    assert by_type["problems"].sum() == min(40, test_rows) and by_type["mean_updates"].between(1, 4).all()

    tprepro(root, "n2f-data", "--task", "algolisp", "--out", "data/n2f/algolisp")
    tprepro(root, "n2f-train", "--task", "algolisp", "--model", "tp_n2f", "--seed", "1",
            "--train", "data/n2f/algolisp/train", "--vocab", "data/n2f/algolisp/vocab.json",
            "--out", "n2f/models/algolisp/tp_n2f-s1", "--checkpoints", "n2f/checkpoints/algolisp/tp_n2f-s1")
    tprepro(root, "interpret-n2f", "--task", "algolisp", "--model-dir", "n2f/models/algolisp/tp_n2f-s1",
            "--test", "data/n2f/algolisp/test", "--out", "n2f/interpret/algolisp")
    members = pd.read_csv(root / "n2f" / "interpret" / "algolisp" / "unbinding_clusters.csv")
    assert len(members) == 4 and members["size"].sum() >= 4
    assert "interpret/algolisp/unbinding_clusters.png" in artifacts(root, root / "n2f" / "models" / "algolisp" / "tp_n2f-s1")

    missing = tprepro_fails(root, "interpret-n2f", "--task", "algolisp", "--model-dir",
                            "n2f/models/algolisp/tp_n2f_missing", "--test", "data/n2f/algolisp/test",
                            "--out", "n2f/interpret/other")
    assert "n2f/models/algolisp/tp_n2f_missing: no such model folder (does not exist" in missing
    assert missing.rstrip().endswith("one of: n2f/models/algolisp/tp_n2f-s1")  # the model folders beside it
    assert not (root / "n2f" / "interpret" / "other").exists()


def tprepro_fails(root: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "tprepro", *args, "--params", "params.yaml"], cwd=root,
                            env=tool_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stderr
