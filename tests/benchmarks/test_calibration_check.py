"""benchmarks/calibration_check.py: real data jobs of modules no doc singles out, run and repeated, against the
plan's calibrated estimate of each (the calibration's own reference run: tests/plan/test_calibrate.py)."""

import json
import sys

import pytest

from helpers import REPO
from tprepro.plan.machine import this_machine
from tprepro.work import module_family

from benchmarks import calibration_check


def test_the_checked_modules_are_ones_no_page_singles_out():
    """The check is of jobs the plan was not tuned on: no page but the calibration's own names their modules."""
    pages = [page for page in (REPO / "docs").glob("*.md") if not page.name.startswith("calibration-")]
    named = {module for _, module in calibration_check.JOBS for page in pages if module in page.read_text()}
    assert named == set()
    assert len({module_family(module) for _, module in calibration_check.JOBS}) == len(calibration_check.JOBS)


def test_the_verdict_counts_estimates_within_a_quarter_of_the_measured_seconds():
    rows = [{"calibrated_over_measured": ratio} for ratio in (0.74, 0.75, 1.0, 1.25, 1.3)]
    assert calibration_check.judged(rows) == {"within_25_percent": 3, "checked": 5, "median": 1.0, "range": [0.74, 1.3]}


@pytest.mark.slow
def test_each_size_runs_every_job_repeatedly_and_compares_their_median(tmp_path, generate_python, monkeypatch):
    from tprepro.plan.calibrate import Calibration, ReferenceJob

    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    monkeypatch.setattr(calibration_check, "SIZES", (40, 80))
    # The calculus and arithmetic data jobs priced by their own reference jobs (x3, x1), the others by the median (x2).
    fixed = Calibration(2.0, this_machine(), (ReferenceJob("data calculus", 3.0, 1.0, "calculus__*"),
                                               ReferenceJob("data arithmetic", 1.0, 1.0, "arithmetic__*")), "a test")
    monkeypatch.setattr(calibration_check, "calibrate", lambda *args, **kwargs: fixed)
    out = tmp_path / "check.json"
    monkeypatch.setattr(sys, "argv", ["calibration_check.py", "--params", str(REPO / "params.yaml"), "--commit",
                                      "0000000", "--out", str(out), "--repeats", "2"])
    assert calibration_check.main() == 0
    record = json.loads(out.read_text())
    assert record["repeats"] == 2 and [c["factor"] for c in record["calibrations"]] == [2.0, 2.0]
    assert [(row["job"], row["problems"]) for row in record["jobs"]] == [
        (f"{split}/{module}", size) for size in (40, 80) for split, module in calibration_check.JOBS]
    for row in record["jobs"]:
        assert len(row["runs_cpu_s"]) == 2 and row["cpu_s"] == pytest.approx(sum(row["runs_cpu_s"]) / 2)
        factor = {"calculus": 3.0, "arithmetic": 1.0}.get(module_family(row["job"].split("/")[1]), 2.0)
        assert row["factor"] == factor and row["calibrated_s"] == pytest.approx(factor * row["plan_s"], rel=1e-3)
        assert row["calibrated_over_measured"] == pytest.approx(row["calibrated_s"] / row["cpu_s"], rel=1e-2)
    assert record["within_25_percent"] == sum(0.75 <= r["calibrated_over_measured"] <= 1.25 for r in record["jobs"])
    assert record["machine"]["cpu"] == this_machine().cpu  # the machine the jobs ran on, named
