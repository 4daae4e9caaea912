"""benchmarks/paired_evaluations.py: two folders of evaluation CSVs, paired by seed."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from helpers import REPO, tool_env
from tprepro.report.tables import write_digested_csv

BENCHMARKS_ON_PATH = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))  # a package


def write_evals(folder, model: str, accuracies: dict[int, dict[tuple[str, str], float]]) -> None:
    """`<model>-s<seed>.csv` per seed: {(split, module): accuracy}, 100 problems each."""
    folder.mkdir(parents=True)
    for seed, per_module in accuracies.items():
        rows = [{"model": model, "seed": seed, "module": module, "split": split, "n": 100,
                 "correct": round(100 * accuracy), "accuracy": accuracy}
                for (split, module), accuracy in per_module.items()]
        write_digested_csv(pd.DataFrame(rows), folder / f"{model}-s{seed}.csv")  # as the evaluate stage writes it


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.paired_evaluations", *map(str, args)],
                          env=tool_env(PYTHONPATH=BENCHMARKS_ON_PATH), capture_output=True,
                          text=True, timeout=300)


def test_the_paired_difference_is_b_minus_a_per_seed(tmp_path):
    a = {1: {("interpolate", "m1"): 0.5, ("interpolate", "m2"): 0.3, ("extrapolate", "m3"): 0.1},
         2: {("interpolate", "m1"): 0.6, ("interpolate", "m2"): 0.2, ("extrapolate", "m3"): 0.2},
         3: {("interpolate", "m1"): 0.4, ("interpolate", "m2"): 0.4, ("extrapolate", "m3"): 0.3}}
    b = {seed: {key: value + 0.01 * seed for key, value in per_module.items()} for seed, per_module in a.items()}
    b[4] = b[3]  # a seed only one side has is left out
    write_evals(tmp_path / "a", "tp", a)
    write_evals(tmp_path / "b", "tp", b)
    result = run("--model", "tp", "--a", tmp_path / "a", "--b", tmp_path / "b", "--labels", "pool", "random",
                 "--out", tmp_path / "out.json")
    assert result.returncode == 0, result.stderr
    assert "| interpolation_acc | 40.00 ± 0.00 | 42.00 ± 1.00 | +2.00 [" in result.stdout
    table = json.loads((tmp_path / "out.json").read_text())
    assert table["seeds"] == [1, 2, 3]
    interpolation = table["metrics"]["interpolation_acc"]
    assert interpolation["seeds"]["random"] == {"1": pytest.approx(41), "2": pytest.approx(42), "3": pytest.approx(43)}
    assert interpolation["paired"]["mean"] == pytest.approx(2) and interpolation["paired"]["low"] < 2
    assert table["metrics"]["extrapolate/m3"]["pool"]["mean"] == pytest.approx(20)


def test_no_common_seed_is_an_error(tmp_path):
    write_evals(tmp_path / "a", "tp", {1: {("interpolate", "m1"): 0.5}})
    write_evals(tmp_path / "b", "tp", {2: {("interpolate", "m1"): 0.5}})
    result = run("--model", "tp", "--a", tmp_path / "a", "--b", tmp_path / "b", "--out", tmp_path / "out.json")
    assert result.returncode != 0 and "no seed of tp evaluated in both" in result.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_side_may_be_a_recorded_table_of_the_same_model(tmp_path):
    """A new set is paired with one recorded earlier, whose evaluation files are gone."""
    a = {seed: {("interpolate", "m1"): 0.1 * seed, ("extrapolate", "m2"): 0.05 * seed} for seed in (1, 2, 3)}
    write_evals(tmp_path / "random", "tp", a)
    write_evals(tmp_path / "pool16", "tp", {seed: {key: value + 0.02 for key, value in per.items()}
                                            for seed, per in a.items()})
    write_evals(tmp_path / "pool4", "tp", {seed: {key: value + 0.01 for key, value in per.items()}
                                           for seed, per in a.items()})
    first = run("--model", "tp", "--a", tmp_path / "pool16", "--b", tmp_path / "random", "--labels", "pool16",
                "random", "--out", tmp_path / "first.json")
    assert first.returncode == 0, first.stderr
    again = run("--model", "tp", "--a", tmp_path / "first.json", "--b", tmp_path / "pool4", "--labels", "random",
                "pool4", "--out", tmp_path / "again.json")
    assert again.returncode == 0, again.stderr
    interpolation = json.loads((tmp_path / "again.json").read_text())["metrics"]["interpolation_acc"]
    assert interpolation["paired"]["mean"] == pytest.approx(1) and interpolation["random"]["mean"] == pytest.approx(20)
    wrong = run("--model", "tp", "--a", tmp_path / "first.json", "--b", tmp_path / "pool4", "--labels", "pool4",
                "pool4", "--out", tmp_path / "wrong.json")
    assert wrong.returncode != 0 and "first.json: holds tp as pool16 and random, not tp as pool4" in wrong.stderr
