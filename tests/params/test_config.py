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
    from tprepro.params import PARAMS_ENV, RESOLVED_DIR, load_params, snakemake_params

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(PARAMS_ENV, "")  # recorded, so the export below is undone after the test
    source = str(REPO / "params.yaml")
    path, params = snakemake_params({"params": source, "train.steps": 7, "models.transformer.d_ff": 96})
    assert path.startswith(f"{RESOLVED_DIR}/params-") and os.environ[PARAMS_ENV] == path
    assert params["train"]["steps"] == 7 and params["models"]["transformer"]["d_ff"] == 96
    assert load_params(path) == params  # the jobs read exactly these settings
    other, _ = snakemake_params({"params": source, "train.steps": 8})
    assert other != path and load_params(path)["train"]["steps"] == 7  # another invocation's file is its own
    assert snakemake_params({"params": source, "train.steps": 7, "models.transformer.d_ff": 96})[0] == path
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
    [written] = (root / ".snakemake/tprepro").glob("params-*.yaml")
    train = yaml.safe_load(written.read_text())["train"]
    assert train["steps"] == 7 and train["lr"] == 0.002 and train["batch_size"] == 64  # merged, typed


@pytest.mark.slow
def test_a_dry_run_with_other_overrides_cannot_change_a_running_jobs_settings(tmp_path, generate_python):
    """Two real data jobs under `--config data={train_per_module: 30}` while dry runs ask for 50 again
    and again: both jobs write 30 problems (before issue 25 every invocation shared one settings file,
    and the job that started after a dry run wrote 50)."""
    import json
    import subprocess
    import sys

    from helpers import copy_project, tool_env

    root = copy_project(tmp_path / "repo")
    targets = [f"data/mathematics/train-easy/{module}" for module in ("numbers__place_value", "numbers__round_number")]
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "1"]
    env = tool_env(TPREPRO_GENERATE_PYTHON=generate_python)
    job = subprocess.Popen([*snakemake, *targets, "--config", "data={train_per_module: 30, rows_per_shard: 1000}"],
                           cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dry_runs = 0
    while job.poll() is None and dry_runs < 20:  # the jobs run for seconds: dry runs land between them
        dry = subprocess.run([*snakemake, "-n", *targets, "--config", "data={train_per_module: 50}"], cwd=root,
                             env=env, capture_output=True, text=True)
        assert dry.returncode == 0, dry.stdout + dry.stderr
        dry_runs += 1
    output, _ = job.communicate(timeout=600)
    assert job.returncode == 0, output
    assert dry_runs >= 1
    for target in targets:
        assert json.loads((root / target / "manifest.json").read_text())["rows"] == 30, target
    assert len(list((root / ".snakemake/tprepro").glob("params-*.yaml"))) == 2
