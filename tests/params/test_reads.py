"""What a command reads of its params (tprepro.params.reads): a key read is noted, a section read whole is
noted as the section, guards and records are not, and the mapping behaves as the dict it stands for."""

import copy
import json

import yaml

from tprepro.params import reads


def _recorded(data: dict):
    noted: set[str] = set()
    return reads.Recorded(data, "", noted), noted


PARAMS = {"train": {"steps": 10, "lr": 0.1}, "evaluate": {"batch_size": 4, "max_answer_length": 30},
          "grid": {"models": ["a", "b"]}, "mlflow": {"prefix": "x"}}


def test_a_key_read_is_noted_and_a_section_only_through_its_keys():
    params, noted = _recorded(PARAMS)
    assert params["evaluate"]["max_answer_length"] == 30
    assert "train" in params and params.get("evaluate") is params["evaluate"]
    assert noted == {"evaluate.max_answer_length"}  # a section's presence is not its content


def test_a_section_read_whole_is_noted_whole():
    for read_whole in (lambda s: dict(s), lambda s: {**s}, lambda s: list(s.items()), lambda s: json.dumps(s),
                       lambda s: copy.deepcopy(s), lambda s: len(s), lambda s: yaml.safe_dump(s)):
        params, noted = _recorded(PARAMS)
        read_whole(params["train"])
        assert "train" in noted and all(key.startswith("train") for key in noted), read_whole  # keys under it too


def test_a_missing_key_asked_for_is_a_read_of_it():
    params, noted = _recorded(PARAMS)
    assert params["train"].get("packing") is None and "optimizer" not in params["train"]
    assert noted == {"train.packing", "train.optimizer"}


def test_guards_and_records_read_without_noting():
    params, noted = _recorded(PARAMS)
    assert "a" in reads.peek(params, "grid", "models")
    assert reads.for_the_record(params["mlflow"]) == {"prefix": "x"}
    assert noted == set()


def test_copies_are_plain_dicts_equal_to_the_params():
    params, _ = _recorded(PARAMS)
    for copied in (copy.deepcopy(params), params.copy(), reads.for_the_record(params)):
        assert type(copied) is dict and copied == PARAMS and type(copied["train"]) is dict


def test_recording_is_off_unless_started(monkeypatch):
    monkeypatch.setattr(reads, "_READS", None)
    assert reads.recorded(PARAMS) is PARAMS and reads.reads() == set()
    reads.start_recording()
    params = reads.recorded(PARAMS)
    params["train"]["steps"]
    assert reads.reads() == {"train.steps"}
