"""The Mathematics experiment's settings: what its jobs do, counted as the stages really do it."""

import random

import pytest

from helpers import arithmetic_rows, load_default_params, write_dataset
from tprepro.data.shards import open_dataset
from tprepro.evaluate.evaluate import sample_rows
from tprepro.experiments.mathematics.settings import evaluate_work, train_sample_size


@pytest.mark.parametrize("wanted", [3, 10, 30, 31, 100])
def test_the_training_sample_counted_is_the_one_an_evaluation_draws(tmp_path, wanted):
    """Drawn from the first shard of each training split: 3 shards of 10 rows cap it at 30."""
    splits = [open_dataset(write_dataset(tmp_path / f"split{i}", arithmetic_rows(25, seed=i), rows_per_shard=10))
              for i in range(3)]
    params = load_default_params()
    params["data"].update(train_per_module=25, rows_per_shard=10)
    params["evaluate"]["train_sample"] = wanted
    drawn = len(sample_rows(splits, wanted, random.Random(1)))
    assert train_sample_size(params) == drawn == min(wanted, 30)
    grid = params["grid"]
    held_out = (len(grid["modules"]) + len(grid["extrapolation_modules"])) * params["data"]["test_per_module"]
    assert evaluate_work(params, {"model": "transformer"}).items == held_out + len(grid["modules"]) * drawn
