"""The `tprepro` command line: stage errors name the file or key, exit status 2, no traceback."""

import pytest

from tprepro.cli import main

from helpers import REPO


def run(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_models_lists_presets_with_parameter_counts(capsys):
    status, out, _ = run(capsys, "models")
    assert status == 0
    assert "tp_transformer_paper" in out and "49,178,112" in out and "44,187,648" in out


def test_validate_accepts_the_shipped_params(capsys):
    for path in (REPO / "params.yaml", REPO / "workflow/configs/paper.yaml"):
        assert run(capsys, "validate", "--params", str(path))[0] == 0


def test_missing_training_data_is_named(capsys, tmp_path):
    status, _, err = run(capsys, "train", "--params", str(REPO / "params.yaml"), "--model", "transformer",
                         "--seed", "1", "--train", str(tmp_path / "train-easy"), "--vocab", str(tmp_path / "v.json"),
                         "--out", str(tmp_path / "m"), "--checkpoints", str(tmp_path / "c"),
                         "--heldout", str(tmp_path / "interpolate"))
    assert status == 2
    assert f"{tmp_path}/train-easy/arithmetic__add_or_sub/manifest.json: missing dataset manifest" in err
    assert not (tmp_path / "m").exists() or {p.name for p in (tmp_path / "m").iterdir()} == {"trainer.lock"}  # its lock at most


def test_evaluating_an_untrained_model_is_named(capsys, tmp_path):
    status, _, err = run(capsys, "evaluate", "--params", str(REPO / "params.yaml"), "--model-dir",
                         str(tmp_path / "m"), "--interpolate", "i", "--extrapolate", "e", "--train", "t",
                         "--out", str(tmp_path / "out.csv"))
    assert status == 2 and "train_metrics.json: missing (run the train stage first)" in err
    assert not (tmp_path / "out.csv").exists()


def test_unknown_module_is_named(capsys, tmp_path):
    status, _, err = run(capsys, "data", "--params", str(REPO / "params.yaml"), "--split", "interpolate",
                         "--module", "arithmetic__nope", "--out", str(tmp_path / "d"))
    assert status == 2 and "arithmetic__nope" in err
    assert not (tmp_path / "d").exists()


def test_unknown_names_come_with_a_suggestion(capsys, tmp_path):
    from tprepro.errors import TpreproError
    from tprepro.experiments.mathematics.modules import validate_module
    from tprepro.models.registry import resolve_model_config

    with pytest.raises(TpreproError, match=r"unknown preset 'tp_transfomer_tiny'; did you mean 'tp_transformer_tiny'\?"):
        resolve_model_config("tp_transfomer_tiny", {}, where="models.x")
    with pytest.raises(TpreproError, match=r"unknown module 'arithmetic__add_or_subb' for split 'train-easy'; did you mean 'arithmetic__add_or_sub'\?"):
        validate_module("train-easy", "arithmetic__add_or_subb")
    with pytest.raises(TpreproError, match=r"unknown setting 'd_modle'; did you mean 'd_model'\?"):
        resolve_model_config("transformer_tiny", {"d_modle": 8}, where="models.x")


def test_an_unknown_model_name_gets_a_suggestion():
    from tprepro.errors import TpreproError
    from tprepro.pipeline import require_model

    with pytest.raises(TpreproError, match=r"^params.yaml: two_variable.models.uut: no such model; did you mean 'ut'\? "
                                           r"\(known: transformer, ut, aut\)$"):
        require_model("params.yaml", {"transformer": {}, "ut": {}, "aut": {}}, "uut", "two_variable.models")


def test_a_misspelt_stage_gets_one_line_with_the_closest_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["trian"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("tprepro: error: no stage 'trian'; did you mean 'train'? "
                                       "(`tprepro --help` lists them)\n")


def test_help_is_short_says_how_stages_normally_run_and_describes_every_stage(capsys):
    from tprepro.cli import build_parser

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "usage: tprepro [-h] [--version] STAGE ..."
    assert "Stages normally run through `make run` or `snakemake`" in text
    subparsers = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert all(p.description for p in subparsers.choices.values()), [n for n, p in subparsers.choices.items()
                                                                       if not p.description]
