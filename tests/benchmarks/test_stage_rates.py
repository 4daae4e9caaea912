"""benchmarks/stage_rates.py, the measurement behind `tprepro plan`'s CPU prices: a run's job records
(as benchmarks/timed_tprepro.sh writes them) become each stage's fixed part and seconds per item."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from helpers import REPO, load_default_params, tool_env, write_params
from tprepro.job_graph import jobs
from tprepro.plan.speeds import read_stage_rates, stage_rates_path
from tprepro.plan.work import work


def test_a_runs_records_become_stage_rates(tmp_path):
    params = load_default_params()
    write_params(tmp_path / "params.yaml", params)
    records = []
    for job in jobs(params):
        done = work(params, job.stage, job.values)
        per_item = {"data": 0.001, "train": 0.002 if done.preset == "transformer_tiny" else 0.003}.get(job.stage, 0.0005)
        seconds = 0.5 if job.stage == "split-index" else 2.0 + per_item * (done.items or 0)
        records.append({"argv": shlex.split(job.command)[1:], "wall_s": seconds * 3, "cpu_s": seconds, "status": 0})
        for output in job.outputs if done.kind == "generate" else ():
            (tmp_path / output).mkdir(parents=True, exist_ok=True)
            (tmp_path / output / "shard.parquet").write_bytes(b"x" * 100 * done.items)
        if job.stage == "n2f-train":  # the trainer's record of its loop: the per-sample part
            metrics = tmp_path / next(out for out in job.outputs if out.endswith("train_metrics.json"))
            metrics.parent.mkdir(parents=True, exist_ok=True)
            metrics.write_text(json.dumps({"wall_seconds": per_item * done.items}))
    records.append({"argv": ["tables"], "wall_s": 1.0, "cpu_s": 1.0, "status": 1})  # failed: left out
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = subprocess.run([sys.executable, "-m", "benchmarks.stage_rates", "--params", "params.yaml",  # as docs/plan.md
                             "--times", "jobs.jsonl", "--run-dir", ".", "--commit", "abc1234", "--source", "a test",
                             "--root", "measured"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=tool_env(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))))
    assert result.returncode == 0, result.stderr[-2000:]
    rates = read_stage_rates(stage_rates_path("cpu", tmp_path / "measured"))
    data = rates.stages["data"]  # two sizes (2,000 and 150 problems): fitted; a rate per module
    assert data["fixed_s"] == pytest.approx(2.0)
    assert data["per_module"] == pytest.approx({module: 0.001 for module in
                                                [*params["grid"]["modules"], *params["grid"]["extrapolation_modules"]]})
    assert rates.rate("data", None, "numbers__place_value").seconds_per_item == pytest.approx(0.001)
    assert rates.rate("data", None, "algebra__linear_1d") is None  # not measured: the plan says so
    assert data["bytes_per_item"] == pytest.approx(100.0)
    assert rates.stages["split-index"]["fixed_s"] == pytest.approx(0.5)
    train = rates.stages["train"]  # one size per preset: the start-up (split-index's 0.5 s) fixed, the rest per sample
    assert train["per_preset"]["transformer_tiny"] == pytest.approx(0.002 + 1.5 / 64_000)
    assert train["per_preset"]["tp_transformer_tiny"] == pytest.approx(0.003 + 1.5 / 64_000)
    assert rates.rate("train", "tp_transformer_tiny").fixed_s == pytest.approx(0.5)
    n2f = rates.stages["n2f-train"]  # split by the trainer's loop seconds: the rest of the job is fixed
    assert n2f["fixed_s"] == pytest.approx(2.0)
    assert n2f["per_preset"] == pytest.approx({preset: 0.0005 for preset in n2f["per_preset"]})
