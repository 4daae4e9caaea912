"""One experiment's training run end to end on a tiny CPU job: the losses and the learning curve, pinned to the
values the code gave before pipeline.train_model was split along its seams (tprepro.training) (same seeds, same numbers)."""

import json

import pandas as pd

from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.evaluate.curves import HeldOut, heldout_sample
from tprepro.models.registry import resolve_model_config
from tprepro.params import TrainConfig
from tprepro.tracking.store import Experiment

from helpers import arithmetic_rows, write_dataset
from training_kit import SMALL

SETTINGS = dict(steps=6, batch_size=8, lr=1e-3, betas=(0.9, 0.995), grad_clip=0.1, warmup_steps=2,
                checkpoint_every=3, log_every=2, bucket_width=8, shuffle_buffer=32, read_rows=16, device="cpu",
                threads=1, prefetch=0)
FINAL_LOSS = 3.669640064239502  # the last window's mean loss, as computed before the split
CURVE_LOSSES = [3.564276, 3.458276]  # held-out loss at steps 3 and 6 (learning_curve.csv's 6 decimals)


def tiny_run(tmp_path):
    from tprepro.training import TrainingRun

    train = open_dataset(write_dataset(tmp_path / "train", arithmetic_rows(200, seed=5), rows_per_shard=64))
    test = open_dataset(write_dataset(tmp_path / "test", arithmetic_rows(40, seed=6), rows_per_shard=64))
    build_vocab([train]).save(tmp_path / "vocab.json")
    return TrainingRun("tp", 3, resolve_model_config("tp_transformer_tiny", SMALL), TrainConfig(**SETTINGS),
                       {"train": train}, tmp_path / "vocab.json", tmp_path / "out", tmp_path / "checkpoints",
                       Experiment("tprepro-test", log_models=False), data_settings={"size": 200},
                       heldout=HeldOut(heldout_sample([test], 8, 3), max_len=6, batch_size=8))


def test_a_tiny_training_run_gives_the_numbers_it_gave_before(tmp_path, monkeypatch):
    from tprepro.training import train_model

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    summary = train_model(tiny_run(tmp_path))
    written = json.loads((tmp_path / "out" / "train_metrics.json").read_text())
    curve = pd.read_csv(tmp_path / "out" / "learning_curve.csv")
    assert summary["steps"] == written["steps"] == 6 and written["mlflow_run_id"]
    assert written["final_loss"] == FINAL_LOSS
    assert curve["step"].tolist() == [3, 6] and curve["heldout_loss"].tolist() == CURVE_LOSSES
