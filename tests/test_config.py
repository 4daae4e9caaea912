"""params.yaml validation: every bad key or type stops with a message naming it."""

import copy
import os

import pytest
import yaml

from tprepro.cli import main
from tprepro.params import TrainConfig, load_params, validate_params
from tprepro.errors import TpreproError

from helpers import REPO, load_default_params, write_params


def test_default_params_are_valid():
    params = load_params(REPO / "params.yaml")
    assert TrainConfig.from_params(params).betas == (0.9, 0.995)


def test_paper_overlay_is_valid_and_has_the_paper_settings():
    params = load_params(REPO / "workflow/configs/paper.yaml")
    train = params["train"]
    assert (train["batch_size"], train["lr"], train["betas"], train["grad_clip"]) == (1024, 1e-4, [0.9, 0.995], 0.1)
    assert len(params["grid"]["modules"]) == 56 and len(params["grid"]["extrapolation_modules"]) == 15


def test_cpu_configuration_has_the_reproductions_shape():
    """workflow/configs/cpu.yaml: 6 training and 3 extrapolation modules, 3 seeds per model everywhere,
    and the interpretation module among the trained ones."""
    params = load_params(REPO / "workflow/configs/cpu.yaml")
    grid = params["grid"]
    assert len(grid["modules"]) == 6 and len(grid["extrapolation_modules"]) == 3
    assert grid["seeds"] == params["two_variable"]["seeds"] == params["n2f"]["seeds"] == [1, 2, 3]
    assert params["interpret"]["module"] in grid["modules"]


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda p: p["train"].update(stepz=3), "train.stepz"),
        (lambda p: p["train"].update(steps="many"), "train.steps"),
        (lambda p: p["train"].pop("lr"), "train.lr"),
        (lambda p: p.update(extra={}), "extra"),
        (lambda p: p["grid"].update(modules=["arithmetic__nope"]), "grid.modules"),
        (lambda p: p["grid"].update(extrapolation_modules=["arithmetic__add_or_sub"]), "grid.extrapolation_modules"),
        (lambda p: p["grid"].update(models=["lstm"]), "grid.models"),
        (lambda p: p["data"].update(source="release"), "data.release_root"),
        (lambda p: p["data"].update(source="download"), "data.source"),
    ],
)
def test_bad_params_name_the_key(edit, key):
    params = copy.deepcopy(load_default_params())
    edit(params)
    with pytest.raises(TpreproError, match=key.replace(".", r"\.")):
        validate_params(params, "params.yaml")


def test_bad_model_override_names_the_key(tmp_path, capsys):
    params = load_default_params()
    params["models"]["tp_transformer"]["d_modle"] = 32
    path = write_params(tmp_path / "params.yaml", params)
    assert main(["validate", "--params", str(path)]) == 2
    assert "models.tp_transformer" in capsys.readouterr().err


def test_unreadable_params_file_is_named(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("grid: [unclosed\n")
    with pytest.raises(TpreproError, match="params.yaml: not valid YAML"):
        load_params(bad)
    with pytest.raises(TpreproError, match="not found"):
        load_params(tmp_path / "missing.yaml")


def test_snakemake_config_overrides_are_validated_and_written_for_the_jobs(tmp_path, monkeypatch):
    from tprepro.params import PARAMS_ENV, RESOLVED_PARAMS, load_params, snakemake_params

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(PARAMS_ENV, "")  # recorded, so the export below is undone after the test
    source = str(REPO / "params.yaml")
    path, params = snakemake_params({"params": source, "train.steps": 7, "models.transformer.d_ff": 96})
    assert path == RESOLVED_PARAMS and os.environ[PARAMS_ENV] == RESOLVED_PARAMS
    assert params["train"]["steps"] == 7 and params["models"]["transformer"]["d_ff"] == 96
    assert load_params(path) == params  # the jobs read exactly these settings
    assert snakemake_params({"params": source})[0] == source  # no overrides: the file itself
    with pytest.raises(TpreproError, match=r"with --config train.stepz: train.stepz: .*'stepz' was unexpected"):
        snakemake_params({"params": source, "train.stepz": 7})
    with pytest.raises(TpreproError, match="train.lr"):
        snakemake_params({"params": source, "train.lr": "fast"})


def test_snakemake_runs_its_jobs_with_the_overridden_settings(tmp_path):
    import subprocess
    import sys

    from helpers import copy_project, tool_env

    root = copy_project(tmp_path / "repo")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--config", "train={steps: 7, lr: 0.002}"],
                         cwd=root, env=tool_env(), capture_output=True, text=True, check=True).stdout
    assert "train" in out
    train = yaml.safe_load((root / ".snakemake/tprepro/params.yaml").read_text())["train"]
    assert train["steps"] == 7 and train["lr"] == 0.002 and train["batch_size"] == 64  # merged, typed
