"""The two-variable experiment's settings: its merged train settings and data split rules."""

from __future__ import annotations

from dataclasses import replace

from tprepro.experiments.two_variable.data import split_sizes
from tprepro.params import check_train_settings, reraise_with_key
from tprepro.params.layered import Layered
from tprepro.work import Work, preset_of, training


TRAIN_SETTINGS = Layered("train", ("two_variable.train",))  # its schema requires the keys whose shared values go unread
TRAIN_DEVICE = replace(TRAIN_SETTINGS, keys=("device",))  # what an evaluation reads of them
TRAIN_BUDGET = replace(TRAIN_SETTINGS, keys=("steps", "batch_size"))  # what a table reads of them


def two_variable_train(params: dict) -> dict:
    """`train` with `two_variable.train` on top."""
    return TRAIN_SETTINGS.merged(params)


def check_two_variable(params: dict, source: str) -> None:
    check_train_settings(two_variable_train(params), source, "two_variable.train")
    data = params["two_variable"]["data"]
    reraise_with_key(lambda: split_sizes(data["size"], data["test_fraction"]), source)


# What each job does (tprepro.plan.work), for `tprepro plan` and the SLURM runtimes.
def data_work(params: dict, item: dict) -> Work:
    return Work("generate", params["two_variable"]["data"]["size"])


def train_work(params: dict, item: dict) -> Work:
    return training(two_variable_train(params), preset_of(params["two_variable"]["models"], item["model"]))


def evaluate_work(params: dict, item: dict) -> Work:
    data = params["two_variable"]["data"]
    return Work("decode", split_sizes(data["size"], data["test_fraction"])["test"],
                preset_of(params["two_variable"]["models"], item["model"]))
