"""benchmarks/evaluate_rate.py: a real run's evaluation jobs re-run at three sizes, fitted as one fixed part
and a rate per preset, written as the `evaluate` entry the plan reads and labels; and the fit itself."""

import json
import shutil
import sys

import pytest

from helpers import REPO, copy_project, write_params
from pipeline_kit import micro_params, snakemake
from tprepro.plan.speeds import read_stage_rates, stage_rates_path

from benchmarks import evaluate_rate


def test_one_fixed_part_and_a_rate_per_preset_by_least_squares():
    points = [(preset, n, 4.0 + rate * n) for preset, rate in (("a", 0.01), ("b", 0.03)) for n in (100, 1000, 3000)]
    fixed, rates = evaluate_rate.fit(points)
    assert fixed == pytest.approx(4.0) and rates == pytest.approx({"a": 0.01, "b": 0.03})
    assert evaluate_rate.predicted(fixed, rates, "b", 10_000) == pytest.approx(304.0)
    fixed, rates = evaluate_rate.fit([("a", 100, 1.0), ("a", 1000, 1.0)])  # start-up only: no negative rate
    assert rates["a"] >= 0 and fixed >= 0


@pytest.mark.slow
def test_a_real_runs_evaluations_at_three_sizes_become_the_stage_the_plan_prices(tmp_path, generate_python,
                                                                                 monkeypatch):
    root = copy_project(tmp_path / "repo")
    params = micro_params()
    params["grid"]["models"] = ["transformer"]
    write_params(root / "params.yaml", params)
    snakemake(root, generate_python, "--until", "evaluate")
    benchmarks = tmp_path / "benchmarks"
    shutil.copytree(REPO / "results" / "benchmarks" / "stages", benchmarks / "stages")
    monkeypatch.setattr(sys, "argv", ["evaluate_rate.py", "--run-dir", str(root), "--params", str(root / "params.yaml"),
                                      "--train-sample", "4", "40", "120", "--commit", "0000000",
                                      "--root", str(benchmarks)])
    assert evaluate_rate.main() == 0
    entry = json.loads(stage_rates_path("cpu", benchmarks).read_text())["stages"]["evaluate"]
    fit = entry["fit"]
    # 2 interpolate modules and 1 extrapolation module of 16 problems, plus the training sample per module
    assert fit["problems"] == [48 + 2 * 4, 48 + 2 * 40, 48 + 2 * 120] and fit["presets"] == ["transformer_tiny"] * 3
    assert [row["problems"] for row in fit["out_of_sample"]] == [288] and entry["fixed_s"] > 0.5  # an interpreter
    rates = read_stage_rates(stage_rates_path("cpu", benchmarks))
    assert rates.rate("evaluate", "transformer_tiny").seconds_per_item == entry["per_preset"]["transformer_tiny"]
    assert rates.measured_by("evaluate") == "evaluate fitted at 3 sizes by benchmarks/evaluate_rate.py on cpu (0000000, " \
                                            f"{fit['date']})"
    assert rates.measured_by("train").startswith("train in a pipeline run on cpu")
