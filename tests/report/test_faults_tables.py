"""The tables stage checks the evaluation files it reads (issue 37): a real evaluation CSV written by
the real evaluate stage, then edited (a 225% accuracy, inf, NaN, a word, a changed byte), is refused
by the real `tprepro tables` with exit 2, naming the file and the line or column; no table is written."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from helpers import arithmetic_rows, run_tprepro, write_dataset, write_params
from tprepro.io import digest_path, record_digest
from training_project import make_workspace, train

BIG = "arithmetic__add_or_sub_big"
EVAL = "eval/transformer-s1.csv"


tprepro = run_tprepro


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A trained and evaluated tiny run in `<root>/run`: models/transformer-s1 and eval/transformer-s1.csv."""
    root = make_workspace(tmp_path_factory.mktemp("tables"), steps=4, checkpoint_every=2, log_every=2)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["grid"]["extrapolation_modules"] = [BIG]
    params["evaluate"].update(train_sample=8)
    params["data"]["test_per_module"] = 600  # the size of the test sets evaluated below (600 and 20 problems)
    write_params(root / "params.yaml", params)
    write_dataset(root / "data" / "extrapolate" / BIG, arithmetic_rows(20, seed=4, module=BIG, split="extrapolate"))
    run = root / "run"
    train(root, run)
    (run / "models").mkdir()
    (run / "model").rename(run / "models" / "transformer-s1")
    data = root / "data" / "train-easy"
    result = tprepro("evaluate", "--params", root / "params.yaml", "--model-dir", "models/transformer-s1",
                     "--interpolate", data, "--extrapolate", root / "data" / "extrapolate", "--train", data,
                     "--out", EVAL, cwd=run)
    assert result.returncode == 0, result.stderr[-3000:]
    assert digest_path(run / EVAL).is_file()
    return root


def tables(root, run) -> subprocess.CompletedProcess:
    return tprepro("tables", "--params", root / "params.yaml", "--eval-dir", "eval", "--models-dir", "models",
                   "--table", "results/tables/table1", "--modules-csv", "results/tables/mathematics_modules.csv",
                   "--figure", "results/figures/mathematics_modules.png",
                   "--curves", "results/figures/learning_curves.png", "--metrics", "results/metrics.json", cwd=run)


def edit_cell(path, line: int, column: str, value: str) -> None:
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = value
    lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow  # pipeline subprocesses
@pytest.mark.parametrize("column, value, message", [
    ("accuracy", "2.2556", "'2.2556' is outside [0, 1]"),  # a Table 1 cell of 225.56%
    ("correct", "inf", "'inf' is not a finite number"),
    ("accuracy", "nan", "'nan' is not a finite number"),  # was counted as 0
    ("correct", "many", "'many' is not a finite number"),  # was a raw TypeError
], ids=["225%", "inf", "NaN", "non-numeric"])  # the other rules: tests/report/test_report.py
def test_an_edited_evaluation_file_with_its_digest_updated_is_range_checked(project, tmp_path, column, value,
                                                                             message):
    run = shutil.copytree(project / "run", tmp_path / "run")
    edit_cell(run / EVAL, 3, column, value)
    record_digest(run / EVAL)  # a consistent file with wrong numbers: the range check must catch it
    result = tables(project, run)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{EVAL}: line 3, column {column!r}: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (run / "results").exists()  # nothing written


@pytest.mark.slow  # pipeline subprocesses
def test_an_evaluation_file_changed_after_it_was_written_is_refused(project, tmp_path):
    run = shutil.copytree(project / "run", tmp_path / "run")
    path = run / EVAL
    path.write_text(path.read_text().replace(",", ", ", 1))  # a plausible edit: same numbers
    result = tables(project, run)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{EVAL}: its content changed after it was written" in result.stderr
    assert not (run / "results").exists()


@pytest.mark.slow  # pipeline subprocesses
@pytest.mark.parametrize("edits, message", [
    ({"correct": "54.5"}, "line 3, column 'correct': '54.5' is not an integer"),  # Table 1 read 15.67%
    ({"n": "1000000000", "accuracy": "0.000000"},  # consistent numbers, but no set holds them
     "line 3, column 'n': 1000000000 is more than the 600 problems of the extrapolate set of "
     "arithmetic__add_or_sub_big (data.test_per_module)"),
    ({"correct": "3"}, "line 3, column 'accuracy': "),  # accuracy no longer correct / n
], ids=["fractional-count", "n-beyond-the-set", "accuracy-not-correct-over-n"])
def test_evaluation_counts_must_be_whole_and_n_the_sets_size(project, tmp_path, edits, message):
    """Issue 46, gap 4: an evaluation CSV with its digest recomputed by hand and correct=54.5 or n=1e9 reached
    Table 1; the real `tprepro tables` now refuses it, naming the file, line and column; nothing written."""
    run = shutil.copytree(project / "run", tmp_path / "run")
    for column, value in edits.items():
        edit_cell(run / EVAL, 3, column, value)
    record_digest(run / EVAL)
    result = tables(project, run)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{EVAL}: {message}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (run / "results").exists()


@pytest.mark.slow  # pipeline subprocesses
def test_two_evaluations_of_one_set_must_agree_on_its_size(project, tmp_path):
    """A second run's file whose n for the same (split, module) differs (its accuracy consistent) is refused."""
    run = shutil.copytree(project / "run", tmp_path / "run")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["grid"]["seeds"] = [1, 2]
    write_params(run / "params.yaml", params)
    shutil.copytree(run / "models" / "transformer-s1", run / "models" / "transformer-s2")
    second = run / "eval" / "transformer-s2.csv"
    shutil.copy(run / EVAL, second)
    edit_cell(second, 3, "seed", "2")
    lines = second.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[2].split(",")
    cells[header.index("n")] = str(int(cells[header.index("n")]) - 1)
    cells[header.index("accuracy")] = f"{int(float(cells[header.index('correct')])) / int(cells[header.index('n')]):.6f}"
    lines[2] = ",".join(cells)
    second.write_text("\n".join(lines) + "\n")
    record_digest(second)
    result = tprepro("tables", "--params", run / "params.yaml", "--eval-dir", "eval", "--models-dir", "models",
                     "--table", "results/tables/table1", "--modules-csv", "results/tables/mathematics_modules.csv",
                     "--figure", "results/figures/mathematics_modules.png",
                     "--curves", "results/figures/learning_curves.png", "--metrics", "results/metrics.json", cwd=run)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "eval/transformer-s2.csv: line 3, column 'n': " in result.stderr
    assert "differs from n = " in result.stderr and f"of the same set" in result.stderr
    assert not (run / "results").exists()


@pytest.mark.slow  # pipeline subprocesses
def test_an_evaluation_file_whose_digest_was_removed_is_refused(project, tmp_path):
    """Issue 46 (cosmetic): removing the `.sha256` sidecar disabled the check; evaluation files always get
    one, so the real `tprepro tables` refuses a file without it, naming the file."""
    run = shutil.copytree(project / "run", tmp_path / "run")
    digest_path(run / EVAL).unlink()  # then any consistent edit of the file would go unnoticed
    result = tables(project, run)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{EVAL}: no recorded digest (transformer-s1.csv.sha256 is missing)" in result.stderr
    assert not (run / "results").exists()


@pytest.mark.slow  # pipeline subprocesses
def test_an_evaluation_killed_between_its_file_and_its_digest_leaves_no_old_digest(project, tmp_path):
    """Issue 46 (cosmetic): a re-evaluation killed (SIGKILL, a real process) after writing its CSV but before
    its digest left the earlier run's `.sha256` beside the new file, read as "content changed". Now the old
    digest goes before the new file is written: the file is refused as unfinished, and a rerun mends it."""
    import os
    import sys

    run = shutil.copytree(project / "run", tmp_path / "run")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["evaluate"]["train_sample"] = 5  # a re-evaluation whose file differs from the first
    write_params(run / "params.yaml", params)
    before = (run / EVAL).read_bytes()
    data = project / "data" / "train-easy"
    argv = ["tprepro", "evaluate", "--params", "params.yaml", "--model-dir", "models/transformer-s1",
            "--interpolate", str(data), "--extrapolate", str(project / "data" / "extrapolate"), "--train", str(data),
            "--out", EVAL]
    script = ("import os, runpy, signal, sys\n"
              "import tprepro.report.tables as tables\n"
              "tables.record_digest = lambda path: os.kill(os.getpid(), signal.SIGKILL)  # killed right here\n"
              f"sys.argv = {argv!r}\n"
              "runpy.run_module('tprepro', run_name='__main__')\n")
    from helpers import tool_env
    killed = subprocess.run([sys.executable, "-c", script], cwd=run, env=tool_env(), capture_output=True, text=True,
                            timeout=600)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert (run / EVAL).read_bytes() != before  # the new file is in place, its digest not
    assert not digest_path(run / EVAL).exists()
    result = tprepro("tables", "--params", run / "params.yaml", "--eval-dir", "eval", "--models-dir", "models",
                     "--table", "results/tables/table1", "--modules-csv", "results/tables/mathematics_modules.csv",
                     "--figure", "results/figures/mathematics_modules.png",
                     "--curves", "results/figures/learning_curves.png", "--metrics", "results/metrics.json", cwd=run)
    assert result.returncode == 2 and f"{EVAL}: no recorded digest" in result.stderr, result.stderr[-3000:]
    assert "content changed" not in result.stderr
    rerun = tprepro(*argv[1:], cwd=run)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert digest_path(run / EVAL).is_file()
    assert not [p.name for p in (run / "eval").iterdir() if p.name.startswith(".")]  # no temporary left
