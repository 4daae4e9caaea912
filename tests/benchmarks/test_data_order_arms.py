"""benchmarks/data_order.py: what each arm name stands for."""

import sys

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from data_order import arm_settings  # noqa: E402

from tprepro.params import TrainConfig  # noqa: E402


@pytest.fixture
def config():
    return TrainConfig(steps=1, batch_size=8, lr=1e-3, betas=(0.9, 0.99), grad_clip=1.0, warmup_steps=0,
                       checkpoint_every=1, log_every=1, bucket_width=16, shuffle_buffer=8, read_rows=8,
                       device="cpu", threads=1)


@pytest.mark.parametrize("arm, settings", [
    ("random", {"batching": "pool", "pool_batches": 1, "loss_weighting": "batch"}),
    ("buckets", {"batching": "buckets", "bucket_width": 16, "loss_weighting": "batch"}),
    ("buckets8", {"batching": "buckets", "bucket_width": 8, "loss_weighting": "batch"}),
    ("pool16", {"batching": "pool", "pool_batches": 16, "loss_weighting": "batch"}),
    ("pool16t", {"batching": "pool", "pool_batches": 16, "loss_weighting": "token"}),
    ("randomt", {"batching": "pool", "pool_batches": 1, "loss_weighting": "token"}),
])
def test_arm_names(arm, settings, config):
    assert arm_settings(arm, config) == settings


@pytest.mark.parametrize("arm", ["pool", "random4", "shuffled", "pool16x"])
def test_unknown_arms_are_refused(arm, config):
    with pytest.raises(SystemExit, match="unknown arm"):
        arm_settings(arm, config)
