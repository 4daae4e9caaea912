"""The Mathematics experiment's settings rules: the `grid:` modules and models, and the module
the interpretation stages analyse."""

from __future__ import annotations

from tprepro.errors import TpreproError, suggestion
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, validate_module
from tprepro.params import reraise_with_key
from tprepro.work import Work, preset_of, training


def check_mathematics(params: dict, source: str) -> None:
    grid = params["grid"]
    for module in grid["modules"]:
        reraise_with_key(lambda: validate_module(INTERPOLATE, module), f"{source}: grid.modules")
    for module in grid["extrapolation_modules"]:
        reraise_with_key(lambda: validate_module(EXTRAPOLATE, module), f"{source}: grid.extrapolation_modules")
    for name in grid["models"]:
        if name not in params["models"]:
            raise TpreproError(f"{source}: grid.models: '{name}' has no entry under models"
                               f"{suggestion(name, params['models'])}")
    if params["interpret"]["module"] not in grid["modules"]:
        raise TpreproError(f"{source}: interpret.module: '{params['interpret']['module']}' is not in grid.modules")


# What each job does (tprepro.plan.work), for `tprepro plan` and the SLURM runtimes.
def data_work(params: dict, item: dict) -> Work:
    split = item.get("split", EXTRAPOLATE)
    data = params["data"]
    count = data["train_per_module"] if split.startswith("train") else data["test_per_module"]
    return Work("generate", count, module=item.get("module", item.get("item")), split=split,
                shards=-(-count // data["rows_per_shard"]))


def vocab_work(params: dict, item: dict) -> Work:
    return Work("read", 3 * len(params["grid"]["modules"]) * params["data"]["train_per_module"])


def train_work(params: dict, item: dict) -> Work:
    return training(params["train"], preset_of(params["models"], item["model"]))


def train_sample_size(params: dict) -> int:
    """Training problems an evaluation decodes per module: `evaluate.train_sample`, drawn evenly from the
    first shard of each training split (tprepro.evaluate.evaluate.sample_rows), so at most those shards' rows."""
    data, wanted = params["data"], params["evaluate"]["train_sample"]
    per_split = min(-(-wanted // len(TRAIN_SPLITS)), data["rows_per_shard"], data["train_per_module"])
    return min(wanted, per_split * len(TRAIN_SPLITS))


def evaluate_work(params: dict, item: dict) -> Work:
    grid, data = params["grid"], params["data"]
    held_out = (len(grid["modules"]) + len(grid["extrapolation_modules"])) * data["test_per_module"]
    train_sample = len(grid["modules"]) * train_sample_size(params)  # drawn per training module
    return Work("decode", held_out + train_sample, preset_of(params["models"], item["model"]))
