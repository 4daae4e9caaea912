"""The two-variable experiment's settings: its merged train settings and data split rules."""

from __future__ import annotations

from tprepro.experiments.two_variable.data import split_sizes
from tprepro.params import check_train_settings, merge_overrides, reraise_with_key


def two_variable_train(params: dict) -> dict:
    """`train` with `two_variable.train` on top."""
    return merge_overrides(params["train"], params["two_variable"]["train"])


def check_two_variable(params: dict, source: str) -> None:
    check_train_settings(two_variable_train(params), source, "two_variable.train")
    data = params["two_variable"]["data"]
    reraise_with_key(lambda: split_sizes(data["size"], data["test_fraction"]), source)
