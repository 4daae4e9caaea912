"""benchmarks/module_screen.py, the measurement behind cpu.yaml's modules and budgets: a real (tiny)
training run on the two-variable data, scored per expression type at every evaluation point."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import REPO, tool_env

from tprepro.experiments.two_variable.data import TYPES


def screen(tmp_path, name: str) -> dict:
    out = tmp_path / f"{name}.json"
    command = [sys.executable, "-m", "benchmarks.module_screen", "--experiment", "two_variable",
               "--preset", "transformer_tiny", "--size", "600", "--test-per-module", "4", "--steps", "20",
               "--eval-every", "10", "--cache", str(tmp_path / "cache"), "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env=tool_env(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| a+a |" in result.stdout  # the printed table, one row per type
    return json.loads(out.read_text())


def test_screen_scores_every_type_at_every_point_and_is_deterministic(tmp_path):
    first = screen(tmp_path, "first")
    assert [p["step"] for p in first["points"]] == [10, 20]
    for point in first["points"]:
        assert set(point["accuracy"]) == set(TYPES)
        assert all(0.0 <= a <= 1.0 for a in point["accuracy"].values())
    assert first["train"]["steps"] == 20 and first["preset"] == "transformer_tiny"

    second = screen(tmp_path, "second")  # the cached data, the same seed: the same run
    assert [(p["loss"], p["accuracy"]) for p in second["points"]] == \
           [(p["loss"], p["accuracy"]) for p in first["points"]]
