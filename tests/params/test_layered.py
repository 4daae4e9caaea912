"""params/layered.py: a shared section read under an experiment's overrides, and the keys a stage depends on."""

import pytest

from helpers import load_default_params
from tprepro.errors import TpreproError
from tprepro.experiments import experiments
from tprepro.experiments.n2f.settings import TRAIN_SETTINGS as N2F_TRAIN
from tprepro.params import validate_params
from tprepro.params.layered import Layered, schema_at

experiments()  # registers every experiment's schema


def test_a_stage_depends_on_the_shared_keys_its_overrides_do_not_always_set():
    keys = N2F_TRAIN.params_keys()
    assert keys[:2] == ("n2f.train", "n2f.{task}.train")
    required = set(schema_at("n2f.train")["required"])
    assert {"steps", "lr", "batch_size"} <= required
    assert {key.removeprefix("train.") for key in keys[2:]} == set(schema_at("train")["properties"]) - required
    assert Layered("train", ("n2f.train",), keys=("steps", "betas")).shared_keys() == ("train.betas",)


def test_merged_settings_take_each_override_in_order_and_skip_an_unnamed_task():
    params = load_default_params()
    params["n2f"]["algolisp"]["train"] = {"steps": 7}
    assert N2F_TRAIN.merged(params)["steps"] == params["n2f"]["train"]["steps"]
    task = N2F_TRAIN.merged(params, task="algolisp")
    assert task["steps"] == 7 and task["lr"] == params["n2f"]["train"]["lr"]
    assert task["betas"] == params["train"]["betas"]  # a shared key no override sets


def test_a_params_file_must_set_the_keys_whose_shared_value_an_experiment_never_reads():
    params = load_default_params()
    del params["two_variable"]["train"]["steps"]
    with pytest.raises(TpreproError, match="two_variable.train.*steps"):
        validate_params(params, "params.yaml")
