"""A job's fingerprint, pinned: the digests below were computed before the resume behaviour moved beside the
settings (params/train_config.py), so checkpoints written before still resume."""

import pytest

from tprepro.models.registry import resolve_model_config
from tprepro.params import TrainConfig
from tprepro.train.trainer import TrainJob


class Symbols:
    symbols = ["<pad>", "a", "b"]


BASE = dict(steps=100, batch_size=8, lr=1e-3, betas=[0.9, 0.995], grad_clip=0.1, warmup_steps=3,
            checkpoint_every=4, log_every=2, bucket_width=8, shuffle_buffer=32, read_rows=16, device="auto",
            threads=0, amp="auto", compile="auto", processes=1, max_requeues=0, curve_sample=64)
DEFAULTS = "cbe1c214c736cd68c42ec68083527d2cb27f1af137ee9b0433beeaee4fe3ab60"


@pytest.mark.parametrize("train, digest", [
    ({}, DEFAULTS),
    ({"batching": "buckets"}, "d7faea83a67b8e92a4ba23fc0a4ca42f38541d09e5dd5fa838cd343fab91c05c"),
    ({"optimizer": "adafactor", "schedule": "cosine", "batching": "buckets", "pool_batches": 4,
      "loss_weighting": "token", "packing": True}, "dabc169ec56720e5157ad0ea82e65f3e8e22361fbcccae70f75dc60783149241"),
    ({"steps": 99, "checkpoint_every": 9, "log_every": 3, "device": "cpu", "threads": 2, "amp": False,
      "compile": False, "processes": 2, "max_requeues": 3, "prefetch": 0, "curve_sample": 7}, DEFAULTS),  # resumable
    ({"lr": 2e-3, "betas": [0.8, 0.9], "grad_clip": 1.0, "warmup_steps": 0, "batch_size": 4, "bucket_width": 9,
      "shuffle_buffer": 5, "read_rows": 6}, "a84e5136609982b3e3464982f0381dcd0ee2002be699fd882badbc1ee5a7b579"),
], ids=["defaults", "buckets", "every-optional-setting", "resumable-changes", "core-settings"])
def test_the_fingerprint_of_the_same_settings_does_not_move(train, digest):
    config = TrainConfig.from_params({"train": {**BASE, **train}})
    job = TrainJob(name="n", seed=3, model=resolve_model_config("tp_transformer_tiny", {}), config=config,
                   files=[], vocab=Symbols(), data_fingerprint="d")
    assert job.fingerprint == digest
