"""The train section declared once: TrainConfig's fields are the schema's train settings, an unknown key is refused,
and each field's resume behaviour is read from the field."""

from dataclasses import fields

import pytest

from tprepro.errors import TpreproError
from tprepro.experiments import experiments
from tprepro.params.rules import params_schema
from tprepro.params.train_config import (FINGERPRINT_DEFAULTS, NOT_TRAINER_SETTINGS, TrainConfig, fingerprinted,
                                         resumable_settings)

from helpers import load_default_params

FIELDS = {f.name for f in fields(TrainConfig)}


def train_schema(section: str) -> dict:
    experiments()  # their sections join the schema
    schema = params_schema()
    for key in section.split("."):
        schema = schema["properties"][key]
    return schema


def test_the_schema_declares_every_field_and_no_other_setting():
    declared = set(train_schema("train")["properties"])
    assert declared - FIELDS == set(NOT_TRAINER_SETTINGS), "in the schema, not in TrainConfig"
    assert FIELDS - declared == set(), "in TrainConfig, not in the schema"


@pytest.mark.parametrize("section", ["two_variable.train", "n2f.train", "summarization.train"])
def test_the_experiments_override_only_train_settings(section):
    assert set(train_schema(section).get("required", ())) <= FIELDS | set(NOT_TRAINER_SETTINGS)


def test_an_unknown_key_is_refused_by_name():
    params = load_default_params()
    params["train"]["stepz"] = 3
    with pytest.raises(TpreproError, match=r"train\.stepz: unknown training setting 'stepz'; did you mean 'steps'"):
        TrainConfig.from_params(params)


def test_settings_outside_the_trainer_are_read_but_not_kept():
    params = load_default_params()
    config = TrainConfig.from_params(params)
    assert config.steps == params["train"]["steps"] and not hasattr(config, "curve_sample")


def test_the_resume_behaviour_is_read_from_the_fields():
    assert resumable_settings() == ("steps", "checkpoint_every", "log_every", "device", "threads", "amp", "compile",
                                    "processes", "max_requeues", "prefetch")
    assert FINGERPRINT_DEFAULTS == {"optimizer": "adam", "schedule": "constant", "batching": "buckets",
                                    "pool_batches": 16, "loss_weighting": "batch", "packing": False}
    config = TrainConfig.from_params(load_default_params())
    kept = fingerprinted(config)
    assert not set(kept) & set(resumable_settings())
    assert all(kept[name] != value for name, value in FINGERPRINT_DEFAULTS.items() if name in kept)
