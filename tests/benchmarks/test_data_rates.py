"""benchmarks/data_rates.py: real data jobs timed at two sizes through the timing wrapper, fitted, written in
the format the plan reads; and the fit itself (benchmarks/kit/fit.py)."""

import json
import sys

import pytest

from helpers import REPO
from tprepro.plan.speeds import read_data_rates

from benchmarks import data_rates
from benchmarks.kit.fit import fit


def test_the_fit_is_the_least_squares_line_and_never_negative():
    rate = fit([(200, 3.0), (1000, 7.0), (20_000, 102.0)])
    assert rate.seconds_per_problem == pytest.approx(0.005, rel=1e-3) and rate.fixed_s == pytest.approx(2.0, abs=0.05)
    assert rate.sizes == (200, 1000, 20_000)
    noisy = fit([(200, 1.8), (1000, 1.7)])  # start-up hides the rate: no negative cost
    assert noisy.seconds_per_problem == 0.0 and noisy.fixed_s == pytest.approx(1.75)
    through_origin = fit([(200, 0.5), (1000, 4.5)])  # a negative fixed part: the line through 0
    assert through_origin.fixed_s == 0.0 and through_origin.seconds_per_problem > 0


@pytest.mark.slow
def test_two_real_sizes_give_a_fit_the_plan_reads(tmp_path, generate_python, monkeypatch):
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    runs = []
    for problems in (40, 400):
        params = tmp_path / f"p{problems}.yaml"
        params.write_text(f"extends: {REPO / 'params.yaml'}\n"
                          "grid: {modules: [numbers__place_value], extrapolation_modules: [numbers__place_value_big]}\n"
                          f"data: {{train_per_module: {problems}, test_per_module: {problems}}}\n"
                          "interpret: {module: numbers__place_value}\n")
        times = tmp_path / f"t{problems}.jsonl"
        monkeypatch.setattr(sys, "argv", ["data_rates.py", "--measure", str(params), "--times", str(times)])
        assert data_rates.main() == 0
        assert len(times.read_text().splitlines()) == 5  # 3 training splits, interpolate, extrapolate
        runs += ["--run", f"{params}={times}"]
    monkeypatch.setattr(sys, "argv", ["data_rates.py", *runs, "--commit", "0000000", "--root", str(tmp_path)])
    assert data_rates.main() == 0
    rates = read_data_rates(tmp_path / "data" / "cpu.json")
    assert set(rates.jobs) == {"train-easy/numbers__place_value", "train-medium/numbers__place_value",
                               "train-hard/numbers__place_value", "interpolate/numbers__place_value",
                               "extrapolate/numbers__place_value_big"}
    assert all(rate.sizes == (40, 400) and rate.fixed_s > 0.5 for rate in rates.jobs.values())  # interpreters
    assert json.loads((tmp_path / "data" / "cpu.json").read_text())["schema"] == "tprepro.data_rates/1"
