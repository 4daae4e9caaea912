"""Calibration: a reference run of real data jobs and a vocabulary slice on the machine at hand gives the
factor every CPU rate is multiplied by; by default when the measured machine is known and not this one."""

import json
import shutil
import statistics
import subprocess
import sys
from collections import Counter

import pytest

from helpers import REPO, copy_project, tool_env
from tprepro.errors import TpreproError
from tprepro.plan.calibrate import REFERENCE_JOBS, reference_seconds
from tprepro.plan.speeds import load_measurements
from tprepro.work import module_family


def test_the_reference_reruns_jobs_the_data_rates_measured_at_exactly_those_sizes():
    found = reference_seconds(load_measurements(REPO / "results" / "benchmarks"))
    assert list(found) == [f"{split}/{module}@{problems}" for split, module, problems in REFERENCE_JOBS]
    assert 20 < sum(found.values()) < 40  # CPU seconds on the measured machine: under a minute on 2 cores
    assert len({module_family(module) for _, module, _ in REFERENCE_JOBS}) == len(REFERENCE_JOBS)


def test_a_reference_job_the_data_rates_lack_is_an_error_naming_the_file_and_job(tmp_path):
    from plan_kit import write_data_rates

    write_data_rates(tmp_path, "cpu", {"train-easy/algebra__polynomial_roots": (1.0, 0.005)})  # at 200 and 1,000
    with pytest.raises(TpreproError, match=r"data/cpu.json: jobs.train-hard/probability__swr_p_level_set: no job "
                                           r"measured at 200 problems"):
        reference_seconds(load_measurements(tmp_path))


def test_a_data_job_is_priced_by_its_family_s_own_reference_jobs_and_the_rest_by_the_median():
    """Module families do not share one speed ratio between two machines (docs/calibration-2026-11-28.md):
    a family's own reference jobs price its data jobs, the vocabulary slices the vocab stage."""
    from tprepro.plan.calibrate import Calibration, ReferenceJob
    from tprepro.plan.machine import this_machine
    from tprepro.work import Work

    jobs = (ReferenceJob("data calculus round 1", 1.2, 1.0, "calculus__*"),
            ReferenceJob("data calculus round 2", 1.4, 1.0, "calculus__*"),
            ReferenceJob("data algebra", 0.9, 1.0, "algebra__*"), ReferenceJob("vocab", 1.5, 2.0, "vocab"))
    calibration = Calibration(0.95, this_machine(), jobs)
    assert calibration.own_factors == {"algebra__*": 0.9, "calculus__*": 1.3, "vocab": 0.75}
    generate = lambda module: Work("generate", 1_000, module=module, split="train-easy")  # noqa: E731
    assert calibration.factor_for("data", generate("calculus__differentiate_composed")) == (
        1.3, "calibrated on this machine, calculus__* reference jobs")
    assert calibration.factor_for("data", generate("comparison__sort")) == (0.95, "calibrated on this machine")
    assert calibration.factor_for("vocab", Work("read", 10)) == (0.75,
                                                                 "calibrated on this machine, vocab reference jobs")
    assert calibration.factor_for("train", Work("train", 10, "transformer_tiny"))[0] == 0.95
    assert "calculus__* x1.30" in calibration.describe() and calibration.as_record()["own_factors"]["vocab"] == 0.75
    assert Calibration(2.0, this_machine(), (), "a test").factor_for("vocab", Work("read", 10))[0] == 2.0


def test_fewer_than_one_round_of_the_reference_is_an_error():
    from tprepro.plan.calibrate import calibrate

    with pytest.raises(TpreproError, match="rounds must be at least 1, not 0"):
        calibrate(str(REPO / "params.yaml"), load_measurements(REPO / "results" / "benchmarks"), rounds=0)


def _plan(root, generate_python, *extra):
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", "params.yaml", "--json", "-", *extra],
                         cwd=root, env=tool_env(TPREPRO_GENERATE_PYTHON=generate_python), capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout), out.stderr


@pytest.mark.slow
def test_a_plan_on_another_cpu_than_the_measured_one_calibrates_every_cpu_rate(tmp_path, generate_python):
    """Issue 55: the committed fits were one machine's, another of its class took 1.6-2.6x their CPU seconds.
    With data/cpu.json naming another CPU than this one's, `tprepro plan` runs the reference here (real data
    jobs, the real generator; here two rounds of it) and multiplies every CPU job's seconds: a data job of a
    family the reference holds by that family's reference jobs' median ratio, the vocab stage by the vocabulary
    slices', every other job by the median over all; --no-calibrate does not; the SLURM runtimes follow."""
    root = copy_project(tmp_path / "repo")
    shutil.copytree(REPO / "results/benchmarks", root / "results/benchmarks", dirs_exist_ok=True)
    data = root / "results/benchmarks/data/cpu.json"
    record = json.loads(data.read_text())
    record["machine"] = {"cpu": "Another CPU(R) of this class", "cores": 2, "torch": "2.13.0+cpu"}
    data.write_text(json.dumps(record))
    measured, _ = _plan(root, generate_python, "--no-calibrate")
    calibrated, log = _plan(root, generate_python, "--calibration-rounds", "2")
    assert measured["calibration"] is None
    calibration = calibrated["calibration"]
    assert "calibrating" in log and "the CPU rates were measured on Another CPU(R) of this class" in log
    assert "2 reference runs" in log and "round 2 of 2" in log
    assert len(calibration["jobs"]) == 2 * (len(REFERENCE_JOBS) + 1)  # each round's, and its vocabulary slice
    assert calibration["factor"] == pytest.approx(statistics.median(j["cpu_s"] / j["reference_s"]
                                                                    for j in calibration["jobs"]), abs=1e-3)
    assert calibration["machine"]["cpu"] != "Another CPU(R) of this class"
    own = calibration["own_factors"]
    assert set(own) == {f"{module_family(module)}__*" for _, module, _ in REFERENCE_JOBS} | {"vocab"}
    for prices, factor in own.items():
        assert factor == pytest.approx(statistics.median(j["cpu_s"] / j["reference_s"] for j in calibration["jobs"]
                                                         if j["prices"] == prices), abs=1e-3)
    priced_by = Counter()
    for before, after in zip(measured["jobs"], calibrated["jobs"]):
        assert before["outputs"] == after["outputs"]
        if before["device"] == "cpu" and before["seconds"] is not None:
            prices = f"{module_family(after['work']['module'])}__*" if after["stage"] == "data" else after["stage"]
            factor = own.get(prices, calibration["factor"])
            priced_by[prices if prices in own else "median"] += 1
            assert after["seconds"] == pytest.approx(before["seconds"] * factor)
            assert after["cpu_factor"] == factor and "calibrated on this machine" in after["source"]
    assert priced_by["vocab"] == 1 and priced_by["median"] > 0 and len(priced_by) > 2, priced_by
