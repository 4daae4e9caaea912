"""benchmarks/data_bytes.py: real data jobs at two sizes, their bytes fitted per module family, written into the
data rates the plan reads; the plan then prices a data job's disk from its family."""

import sys

import pytest

from helpers import REPO
from plan_kit import write_data_rates
from tprepro.plan.speeds import load_measurements

from benchmarks import data_bytes


@pytest.mark.slow
def test_two_real_sizes_give_bytes_per_family_the_plan_prices_disk_with(tmp_path, generate_python, monkeypatch):
    from tprepro.plan.estimate import estimate
    from tprepro.work import Work

    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    params = tmp_path / "p.yaml"
    params.write_text(f"extends: {REPO / 'params.yaml'}\n"
                      "grid: {modules: [numbers__place_value, arithmetic__add_or_sub, arithmetic__mul]}\n"
                      "interpret: {module: numbers__place_value}\n")
    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})
    monkeypatch.setattr(sys, "argv", ["data_bytes.py", "--params", str(params), "--sizes", "50", "500",
                                      "--commit", "0000000", "--root", str(tmp_path)])
    assert data_bytes.main() == 0
    rates = load_measurements(tmp_path).data_rates["cpu"]
    assert set(rates.disk) == {"numbers", "arithmetic"}
    assert rates.jobs["train-easy/arithmetic__add_or_sub"].seconds_per_problem == 0.001  # the rates are kept
    arithmetic = rates.disk["arithmetic"]
    assert 5 < arithmetic.bytes_per_problem < 100 and 500 < arithmetic.shard_bytes < 10_000  # footer + manifest
    job = Work("generate", 10_000, module="arithmetic__mul", split="train-hard", shards=2)
    assert estimate(load_measurements(tmp_path), "cpu", "data", job).disk_bytes == pytest.approx(
        2 * arithmetic.shard_bytes + 10_000 * arithmetic.bytes_per_problem)


def test_a_bad_disk_entry_is_refused_naming_the_key(tmp_path):
    from tprepro.errors import TpreproError
    from tprepro.plan.speeds import update_data_disk

    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})
    entry = {"per_family": {"arithmetic": {"shard_bytes": 2000.0, "bytes_per_problem": 0.0}}, "commit": "0",
             "date": "2026-11-28", "by": "a test"}
    with pytest.raises(TpreproError, match=r"disk.per_family.arithmetic.bytes_per_problem: 0.0 is not a plausible"):
        update_data_disk("cpu", entry, root=tmp_path)
    assert "disk" not in (tmp_path / "data" / "cpu.json").read_text()  # the good file kept
