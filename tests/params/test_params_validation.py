"""One validation path (issue 10): `tprepro validate`, every stage and Snakemake's parse refuse the same
bad params files with an error naming the file and the key (or line)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers import REPO, copy_project, load_default_params, tool_env, write_params
from tprepro.cli import main
from tprepro.params import load_params, validate_params
from tprepro.errors import TpreproError

DEFAULT_TEXT = (REPO / "params.yaml").read_text(encoding="utf-8")


def edited_params(tmp_path, old: str, new: str):
    """The real params.yaml with one line changed, as a file."""
    assert old in DEFAULT_TEXT
    path = tmp_path / "params.yaml"
    path.write_text(DEFAULT_TEXT.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, key", [
    ("lr: 5.0e-4", "lr: .inf", "train.lr"),
    ("lr: 5.0e-4", "lr: .nan", "train.lr"),
    ("lr: 5.0e-4", "lr: -.inf", "train.lr"),
    ("grad_clip: 0.1", "grad_clip: .inf", "train.grad_clip"),
    ("  - 0.9\n", "  - .nan\n", "train.betas.0"),
    ("threshold: 0.95", "threshold: .nan", "report.threshold"),
    ("lr: 1.15e-3", "lr: .inf", "n2f.train.lr"),
    ("noise_rate: 0.1", "noise_rate: .nan", "n2f.algolisp.data.generate.noise_rate"),
])
def test_non_finite_numbers_are_refused_naming_the_key(tmp_path, old, new, key):
    path = edited_params(tmp_path, old, new)
    with pytest.raises(TpreproError, match=re.escape(f"{path}: {key}: expected a finite number")):
        load_params(path)


@pytest.mark.parametrize("edit, key", [
    (lambda p: p["models"]["transformer"].update(preset="transformer_tinyy"), "models.transformer.preset"),
    (lambda p: p["two_variable"]["models"]["ut"].update(preset="nope"), "two_variable.models.ut.preset"),
    (lambda p: p["n2f"]["algolisp"]["models"]["tp_n2f"].update(preset="nope"),
     "n2f.algolisp.models.tp_n2f.preset"),
    (lambda p: p["models"]["tp_transformer"].update(d_modle=32), "models.tp_transformer.d_modle"),
    (lambda p: p["two_variable"]["models"]["aut"].update(n_heads="two"), "two_variable.models.aut.n_heads"),
    (lambda p: p["n2f"]["algolisp"]["models"]["lstm2tp"].update(colour=1), "n2f.algolisp.models.lstm2tp.colour"),
])
def test_unknown_presets_and_overrides_are_refused_by_validate_params(edit, key):
    params = load_default_params()
    edit(params)
    with pytest.raises(TpreproError, match=re.escape(f"params.yaml: {key}")):
        validate_params(params)


@pytest.mark.parametrize("value, accepted", [("auto", True), (0, True), (3, True), ("fast", False), (-1, False)])
def test_prefetch_is_auto_or_a_number_of_batches(value, accepted):
    params = load_default_params()
    params["train"]["prefetch"] = value
    if accepted:
        assert validate_params(params)["train"]["prefetch"] == value
    else:
        with pytest.raises(TpreproError, match=re.escape("params.yaml: train.prefetch")):
            validate_params(params)


def test_the_data_stage_can_skip_model_checks_it_cannot_run_without_torch():
    params = load_default_params()
    params["models"]["transformer"]["preset"] = "nope"
    assert validate_params(params, models=False) is params


def test_a_duplicate_key_is_refused_naming_the_file_line_and_key(tmp_path):
    path = edited_params(tmp_path, "  lr: 5.0e-4", "  lr: 5.0e-4\n  lr: 1.0")
    first = DEFAULT_TEXT[: DEFAULT_TEXT.index("  lr: 5.0e-4")].count("\n") + 1
    with pytest.raises(TpreproError, match=re.escape(
            f"{path}: line {first + 1}: duplicate key 'lr' (first given on line {first})")):
        load_params(path)


def test_a_duplicate_top_level_section_is_refused(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(DEFAULT_TEXT + "\nreport:\n  threshold: 0.5\n", encoding="utf-8")
    with pytest.raises(TpreproError, match=r"duplicate key 'report'"):
        load_params(path)


def test_a_non_utf8_file_is_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_bytes(DEFAULT_TEXT.encode().replace(b"# Default: the tiny", b"# D\xe9fault: the tiny", 1))
    line = DEFAULT_TEXT[: DEFAULT_TEXT.index("# Default: the tiny")].count("\n") + 1
    with pytest.raises(TpreproError, match=re.escape(f"{path}: line {line}: not UTF-8 (byte 0xe9")):
        load_params(path)


def test_tprepro_validate_reports_the_same_errors(tmp_path, capsys):
    path = edited_params(tmp_path, "lr: 5.0e-4", "lr: .nan")
    assert main(["validate", "--params", str(path)]) == 2
    assert f"{path}: train.lr: expected a finite number" in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda p: p["models"]["tp_transformer"].update(preset="tp_transformer_tinyy"),
     "models.tp_transformer.preset: unknown preset 'tp_transformer_tinyy'"),
    (lambda p: p["train"].update(lr=float("inf")), "train.lr: expected a finite number"),
])
def test_snakemake_refuses_the_params_file_at_parse_time(tmp_path, edit, message):
    """`snakemake -n` fails before planning any job, with the same message as `tprepro validate`."""
    root = copy_project(tmp_path / "repo")
    params = load_default_params()
    edit(params)
    write_params(root / "params.yaml", params)
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=root, env=tool_env(),
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert f"params.yaml: {message}" in out.stdout + out.stderr
    assert "Job stats" not in out.stdout


@pytest.mark.parametrize("section", ["models", "two_variable.models", "summarization.models",
                                     "n2f.algolisp.models", "n2f.mathqa.models"])
def test_every_models_mapping_refuses_names_that_are_not_plain(section):
    """A model name becomes a folder and a wildcard: `../x` in any models mapping is refused, naming it."""
    params = load_default_params()
    models = params
    for key in section.split("."):
        models = models[key]
    models["../escape"] = dict(next(iter(models.values())))
    with pytest.raises(TpreproError, match=rf"params.yaml: {re.escape(section)}: '../escape' does not match"):
        validate_params(params, "params.yaml")


@pytest.mark.parametrize("written, value", [("5e-4", 5e-4), ("1E-3", 1e-3), ("+2.5e-4", 2.5e-4), ("5.0e-4", 5e-4)])
def test_floats_written_without_a_dot_are_numbers(tmp_path, written, value):
    """YAML 1.2 reads `5e-4` as a float (so does DVC); PyYAML alone would hand the schema the string '5e-4'."""
    params = load_params(edited_params(tmp_path, "lr: 5.0e-4", f"lr: {written}"))
    assert params["train"]["lr"] == value and isinstance(params["train"]["lr"], float)


def test_snakemake_config_overrides_read_the_same_floats(tmp_path, monkeypatch):
    from tprepro.params import PARAMS_ENV, snakemake_params

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(PARAMS_ENV, "")
    _, params = snakemake_params({"params": str(REPO / "params.yaml"), "train": "{lr: 5e-4}"})
    assert params["train"]["lr"] == 5e-4


def test_a_misspelt_key_gets_the_closest_known_one(tmp_path):
    with pytest.raises(TpreproError, match=r"train.stepz: .*'stepz' was unexpected\); did you mean 'steps'\?"):
        load_params(edited_params(tmp_path, "  steps: 1000 ", "  stepz: 1000 "))


def test_a_params_file_is_validated_once_per_process_until_its_bytes_change(tmp_path, monkeypatch):
    import tprepro.params.loading as params_module

    path = tmp_path / "params.yaml"
    path.write_text((REPO / "params.yaml").read_text())
    calls = []
    real = params_module.validate_params
    monkeypatch.setattr(params_module, "validate_params", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    params_module._validated.cache_clear()
    first = load_params(path)
    first["train"]["steps"] = -1  # a caller's edit stays its own
    assert load_params(path)["train"]["steps"] > 0 and calls == [str(path)]
    path.write_text(path.read_text().replace("steps: 400", "steps: 0", 1))
    with pytest.raises(TpreproError, match=r"two_variable.train.steps: 0 is less than the minimum of 1"):
        load_params(path)
    assert len(calls) == 2


def test_the_shared_schema_names_no_experiment_section_and_each_experiment_brings_its_own():
    """params/schema.yaml holds the shared sections; two_variable, n2f and summarization come from
    their experiments' schema.yaml, and an error inside one still names the file and the key."""
    import yaml

    from tprepro.experiments import experiments

    shared = yaml.safe_load((REPO / "src/tprepro/params/schema.yaml").read_text())
    for name in experiments():
        assert name not in shared["properties"] and name not in shared["required"]
    for name in ("two_variable", "n2f", "summarization"):
        own = yaml.safe_load((REPO / f"src/tprepro/experiments/{name}/schema.yaml").read_text())
        assert list(own["properties"]) == [name]
    params = load_default_params()
    params["two_variable"]["data"]["size"] = 1
    with pytest.raises(TpreproError, match=r"params.yaml: two_variable.data.size: 1 is less than the minimum of 2"):
        validate_params(params, "params.yaml")
    del params["n2f"]
    with pytest.raises(TpreproError, match=r"params.yaml: n2f: 'n2f' is a required property"):
        validate_params(params, "params.yaml")


def test_packing_reaching_summarization_is_refused_by_tprepro_validate(tmp_path):
    """Issue 46, gap 3: `packing: true` for summarization passed `validate` and failed only when its training
    started ("SubwordCodec batches are not packed"). Now the real `tprepro validate` refuses it, naming the
    key and the experiment, whether summarization's own train section or the shared one sets it."""
    from helpers import run_tprepro

    params = load_default_params()
    params["summarization"]["train"]["packing"] = True
    path = write_params(tmp_path / "own.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"{path}: summarization.train.packing: true reaches the summarization experiment, whose SubwordCodec "
            "batches cannot be packed") in done.stderr
    assert "Traceback" not in done.stderr

    params = load_default_params()  # the shared setting, the experiments that cannot pack otherwise opted out
    params["train"]["packing"] = True
    params["two_variable"]["train"]["packing"] = False
    params["n2f"]["train"]["packing"] = False
    path = write_params(tmp_path / "shared.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}: train.packing: true reaches the summarization experiment" in done.stderr

    params["summarization"]["train"]["packing"] = False  # then the shared setting packs Mathematics only
    path = write_params(tmp_path / "opted_out.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shared_packing_names_the_experiment_whose_architecture_cannot_pack():
    params = load_default_params()
    params["train"]["packing"] = True
    params["summarization"]["train"]["packing"] = False
    params["n2f"]["train"]["packing"] = False
    with pytest.raises(TpreproError, match=r"params.yaml: train.packing: true for the two_variable experiment's "
                                           r"two_variable.models.ut, whose universal_transformer architecture"):
        validate_params(params, "params.yaml")


def test_a_misspelt_required_key_gets_a_did_you_mean(tmp_path):
    """Issue 46 (cosmetic): `preest:` for `preset:` said only that 'preset' is required; the real `tprepro
    validate` now names the key given and the one meant."""
    from helpers import run_tprepro

    params = load_default_params()
    params["models"]["transformer"]["preest"] = params["models"]["transformer"].pop("preset")
    path = write_params(tmp_path / "params.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 2
    assert (f"{path}: models.transformer.preset: 'preset' is a required property; 'preest' is given: "
            "did you mean 'preset'?") in done.stderr
