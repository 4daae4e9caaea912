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
    assert not (tmp_path / "m").exists() and not (tmp_path / "c").exists()  # no folder, no lock left behind


def test_a_refused_training_leaves_no_lock_behind(capsys, tmp_path):
    """A mistyped --model is refused after the run's folders are claimed: the folders it made go with their locks;
    a folder that was there before keeps what it held."""
    (tmp_path / "c").mkdir()
    status, _, err = run(capsys, "train", "--params", str(REPO / "params.yaml"), "--model", "transformr",
                         "--seed", "1", "--out", str(tmp_path / "models/transformr-s1"), "--checkpoints",
                         str(tmp_path / "c"))
    assert status == 2 and "models.transformr: no such model; did you mean 'transformer'?" in err
    assert not (tmp_path / "models/transformr-s1").exists()
    assert [path.name for path in (tmp_path / "c").iterdir()] == ["trainer.lock"]  # not made by it: left as it was


def evaluate(capsys, tmp_path, model_dir):
    return run(capsys, "evaluate", "--params", str(REPO / "params.yaml"), "--model-dir", str(model_dir),
               "--interpolate", "i", "--extrapolate", "e", "--train", "t", "--out", str(tmp_path / "out.csv"))


def test_evaluating_an_untrained_model_is_named(capsys, tmp_path):
    (tmp_path / "m").mkdir()
    status, _, err = evaluate(capsys, tmp_path, tmp_path / "m")
    assert status == 2 and f"{tmp_path}/m/train_metrics.json: no trained model here (run the train stage first)" in err
    assert not (tmp_path / "out.csv").exists()


def test_a_model_folder_that_does_not_exist_is_named_as_missing(capsys, tmp_path):
    (tmp_path / "mathematics").mkdir()
    status, _, err = evaluate(capsys, tmp_path, tmp_path / "mathematics/modelz")
    assert status == 2 and f"{tmp_path}/mathematics/modelz: no such model folder (does not exist; the nearest " \
                           f"folder that exists is {tmp_path}/mathematics/)" in err, err
    assert "no trained model here" not in err


def test_a_mistyped_model_folder_names_the_model_folders_beside_it(capsys, tmp_path):
    models = tmp_path / "n2f/models/algolisp"
    (models / "tp_n2f-s1").mkdir(parents=True)
    (models / "tp_n2f-s1" / "model.pt").write_bytes(b"")
    status, _, err = evaluate(capsys, tmp_path, models / "tp_n2f-s2")
    assert status == 2 and err.rstrip().endswith(f"give a trained model's folder, one of: {models}/tp_n2f-s1"), err


def test_a_folder_of_model_folders_names_them(capsys, tmp_path):
    models = tmp_path / "mathematics/models"
    for run_name in ("transformer-s1", "tp_transformer-s1"):
        (models / run_name).mkdir(parents=True)
        (models / run_name / "model.pt").write_bytes(b"")
    status, _, err = evaluate(capsys, tmp_path, models)
    assert status == 2 and f"{models} holds model folders, not a model: give one of them as --model-dir: " \
                           f"{models}/tp_transformer-s1, {models}/transformer-s1" in err, err


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
