"""A params file that extends another: the base's settings with its sections deep-merged over them."""

import pytest

from helpers import REPO
from tprepro.errors import TpreproError
from tprepro.params import load_params


def test_the_rehearsal_is_paper_yaml_at_small_sizes():
    paper = load_params(REPO / "workflow/configs/paper.yaml")
    rehearsal = load_params(REPO / "workflow/configs/rehearsal.yaml")
    assert rehearsal["grid"] == paper["grid"] and rehearsal["data"]["seed"] == paper["data"]["seed"]
    assert rehearsal["data"]["train_per_module"] == 1000 and rehearsal["train"]["lr"] == paper["train"]["lr"]
    assert rehearsal["models"]["transformer"]["preset"] == "transformer_paper"
    assert rehearsal["models"]["transformer"]["d_model"] == 32
    assert "extends" not in rehearsal


def test_an_edit_of_the_base_is_seen(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text((REPO / "params.yaml").read_text())
    (tmp_path / "over.yaml").write_text("extends: base.yaml\ntrain: {steps: 7}\n")
    assert load_params(tmp_path / "over.yaml")["train"]["steps"] == 7
    base.write_text(base.read_text().replace("test_per_module: 150", "test_per_module: 151"))
    assert load_params(tmp_path / "over.yaml")["data"]["test_per_module"] == 151


def test_errors_name_the_files(tmp_path):
    (tmp_path / "base.yaml").write_text((REPO / "params.yaml").read_text())
    (tmp_path / "over.yaml").write_text("extends: base.yaml\ntrain: {stepz: 7}\n")
    with pytest.raises(TpreproError, match=r"over\.yaml \(extending .*base\.yaml\): train"):
        load_params(tmp_path / "over.yaml")
    (tmp_path / "loop.yaml").write_text("extends: loop.yaml\n")
    with pytest.raises(TpreproError, match="a loop"):
        load_params(tmp_path / "loop.yaml")
    (tmp_path / "missing.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(TpreproError, match="nowhere.yaml: params file not found"):
        load_params(tmp_path / "missing.yaml")
