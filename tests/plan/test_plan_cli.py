"""`tprepro plan` on the shipped configurations, its agreement with Snakemake's SLURM job listing, and
`--actual` against a real MLflow store."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from helpers import REPO, copy_project, tool_env
from plan_kit import write_stage_rates

CONFIGS = ["params.yaml", "workflow/configs/cpu.yaml", "workflow/configs/claims.yaml", "workflow/configs/paper.yaml"]


def plan_json(params: str, *extra: str, cwd=REPO) -> dict:
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", params, "--no-calibrate", "--json", "-",
                          *extra],
                         cwd=cwd, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("config", CONFIGS)
def test_every_shipped_configuration_is_priced(config):
    plan = plan_json(config)
    totals = plan["totals"]
    assert totals["jobs"] == len(plan["jobs"]) > 50
    if config != "workflow/configs/paper.yaml":  # the CPU configurations: every job measured on CPU
        assert totals["unmeasured"] == 0, [j["rule"] for j in plan["jobs"] if j["status"] == "unmeasured"]
        assert {job["device"] for job in plan["jobs"]} == {"cpu"}
        assert 0 < totals["critical_path_s"] <= totals["wall_s"] <= totals["cpu_hours"] * 3600
    else:  # generated at paper scale: every (split, module) priced from its own fit (results/benchmarks/data/)
        data = [j for j in plan["jobs"] if j["rule"] == "data"]
        assert {j["status"] for j in data} == {"measured"} and len(data) == 239
        assert max(j["wall_s"] for j in data) <= 3600  # each in about an hour, on the CPUs the plan gives it
        assert totals["cpu_hours"] is None and totals["cpu_unmeasured"] > 0  # release-sized jobs: unknown, said so
        assert totals["priced_cpu_hours"] == pytest.approx(sum(j["seconds"] for j in plan["jobs"] if j["device"] == "cpu"
                                                               and j["seconds"] is not None) / 3600)
    for job in plan["jobs"]:  # issue 55: every priced CPU job's runtime holds on a node 2x slower
        if job["device"] == "cpu" and job["seconds"] is not None and "estimate" in job["runtime_source"]:
            assert job["runtime_min"] * 60 >= 2 * job["wall_s"], job["outputs"]


def _table(*extra: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", "workflow/configs/paper.yaml",
                          "--no-calibrate", *extra], cwd=REPO, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert max(map(len, out.stdout.splitlines())) <= 160
    return out.stdout


def test_the_table_names_each_rule_and_the_totals():
    out = _table("--device", "h100", "--gpus", "8")
    assert re.search(r"^train\s+2\s+716,800,000 samples trained \(700,000 x 1,024\)\s+h100", out, re.M)
    assert "on 8 GPU(s)" in out
    # some GPU jobs are unmeasured: no total leaves them out without saying so, and the priced ones' sum is beside it
    assert re.search(r"^GPU-hours: unknown \(\d+ jobs unmeasured\); \d+\.\d\d of the priced jobs", out, re.M)
    assert re.search(r"CPU-hours: unknown \(6 jobs unmeasured\); \d+\.\d\d of the priced jobs", out)
    assert re.search(r"^wall time: unknown \(\d+ jobs unmeasured\); of the priced jobs", out, re.M)
    assert re.search(r"^  \[1\] ", out, re.M)  # each source once, below the table
    # the CPUs its CPU rates assume, and this machine
    assert "CPU rates measured on unknown CPU (2 cores, torch 2.13.0+cpu): data/cpu.json" in out
    assert "CPU rates measured on Intel(R) Xeon(R) Processor (2 cores, torch 2.13.0+cpu): stages/cpu.json" in out
    assert re.search(r"^this machine: .+; CPU jobs priced at the measured speed", out, re.M)


def test_no_two_job_names_print_alike():
    """Issue 55: --jobs cut names at 40 characters, so 10 names stood for two jobs each."""
    from tprepro.experiments import experiments
    from tprepro.job_graph import jobs
    from tprepro.params import load_params

    experiments()
    out = _table("--jobs")
    rows = out.split("\n-", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    names = [row.split("  ")[0].rstrip() for row in rows if not row.startswith(" ")]
    expected = [job.name for job in jobs(load_params(str(REPO / "workflow/configs/paper.yaml")))]
    assert names == expected and len(set(names)) == len(names)


def test_an_unknown_device_is_refused():
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", "workflow/configs/paper.yaml",
                          "--device", "h1000"], cwd=REPO, env=tool_env(), capture_output=True, text=True)
    assert out.returncode != 0
    assert "--device h1000: not a device kind measured or named in the params (cpu, h100)" in out.stderr


def snakemake_jobs(listing: str) -> dict[frozenset, dict]:
    """A dry run's jobs: their outputs -> their resources (rule all left out)."""
    jobs = {}
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", listing, flags=re.M)[1:]:
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        outputs = re.search(r"^    output: (.*)$", block, re.M)
        if rule == "all" or outputs is None:
            continue
        resources = re.search(r"^    resources: (.*)$", block, re.M)
        jobs[frozenset(outputs.group(1).split(", "))] = dict(
            item.split("=", 1) for item in resources.group(1).split(", ")) if resources else {}
    return jobs


@pytest.mark.slow
def test_the_plan_of_paper_yaml_and_snakemakes_slurm_dry_run_have_the_same_jobs_and_runtimes(tmp_path):
    root = copy_project(tmp_path / "repo")
    for measured in ("stages", "data"):
        shutil.copytree(REPO / "results/benchmarks" / measured, root / "results/benchmarks" / measured)
    config = "workflow/configs/paper.yaml"
    out = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "-n",
                          "--config", f"params={config}"], cwd=root, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    listed = snakemake_jobs(out.stdout)
    plan = plan_json(config, cwd=root)
    planned = {frozenset(job["outputs"]): job for job in plan["jobs"]}
    assert set(listed) == set(planned) and len(planned) == plan["totals"]["jobs"]
    derived = covered = 0
    for outputs, job in planned.items():
        resources = listed[outputs]
        if job["family"] is None:
            assert "runtime" not in resources or job["rule"] == "split_index"
            continue
        assert int(resources["runtime"]) == job["runtime_min"], job["rule"]
        assert int(resources["cpus_per_task"]) == job["cpus"], job["rule"]
        derived += "estimate" in job["runtime_source"]
        if job["device"] == "cpu" and job["wall_s"] is not None:  # issue 55: a node 2x slower finishes it
            assert int(resources["runtime"]) * 60 >= 2 * job["wall_s"], job["outputs"]
            covered += 1
    assert derived >= 2  # vocab and tables take theirs from the plan
    assert covered == sum(job["device"] == "cpu" and job["seconds"] is not None and job["family"] is not None
                          for job in plan["jobs"]) > 239


def test_actual_compares_the_recorded_runs_with_the_estimate(tmp_path):
    from mlflow.tracking import MlflowClient

    from helpers import load_default_params, write_params

    root = tmp_path / "project"
    write_stage_rates(root / "results/benchmarks", "cpu",
                      {"train": {"fixed_s": 10.0, "per_preset": {"transformer_tiny": 0.001, "tp_transformer_tiny": 0.002}}})
    params = load_default_params()
    write_params(root / "params.yaml", params)
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.create_experiment(f"{params['mlflow']['prefix']}-mathematics")
    for model, seconds in (("transformer", 148.0), ("tp_transformer", 276.0)):
        run = client.create_run(experiment, start_time=1_000_000, tags={"stage": "train", "model": model})
        client.log_metric(run.info.run_id, "train.wall_seconds", seconds)  # the trainer's; the run stays open longer
        client.set_terminated(run.info.run_id, "FINISHED", end_time=1_000_000 + int(seconds * 3000))
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", "params.yaml", "--actual"],
                         cwd=root, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("train "))
    # estimate: 10 s + 64,000 samples x 1 ms, and 10 s + 64,000 x 2 ms = 74 s + 138 s; actual 424 s
    assert line.split()[1:3] == ["2", "2"] and "3.5 min" in line and "7.1 min" in line and line.endswith("2.00")


def _measured(root, kind: str, edit) -> None:
    """Valid measurement files of each format under root/results/benchmarks, then one value edited as a hand or
    a broken benchmark leaves it (JSON's NaN and Infinity included)."""
    from plan_kit import write_data_rates, write_throughput

    benchmarks = root / "results" / "benchmarks"
    files = {"throughput": write_throughput(benchmarks, "cpu", "transformer_tiny", 2000.0, decode_problems_per_s=500.0),
             "stages": write_stage_rates(benchmarks, "cpu", {"vocab": {"fixed_s": 2.0, "seconds_per_item": 3e-6},
                                                             "train": {"fixed_s": 5.0, "per_preset": {
                                                                 "transformer_tiny": 0.001}}}),
             "data": write_data_rates(benchmarks, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})}
    path = files[kind]
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))  # allow_nan: writes NaN and Infinity as JSON readers take them


@pytest.mark.parametrize("kind, edit, message", [
    ("throughput", lambda d: d.update(samples_per_s=float("nan")), "samples_per_s: nan is not a plausible speed"),
    ("throughput", lambda d: d.update(samples_per_s=float("inf")), "samples_per_s: inf is not a plausible speed"),
    ("throughput", lambda d: d.update(samples_per_s=1e-300), "samples_per_s: 1e-300 is not a plausible speed"),
    ("throughput", lambda d: d.update(samples_per_s=0), "samples_per_s: 0 is not a plausible speed"),
    ("throughput", lambda d: d.update(decode_problems_per_s=float("inf")), "decode_problems_per_s: inf is not"),
    ("throughput", lambda d: d.update(flops_per_sample=1e300), "flops_per_sample: 1e+300 is not a plausible"),
    ("stages", lambda d: d["stages"]["train"]["per_preset"].update(transformer_tiny=1e300),
     "stages.train.per_preset.transformer_tiny: 1e+300 is not a plausible seconds per item"),
    ("stages", lambda d: d["stages"]["vocab"].update(fixed_s=float("nan")), "stages.vocab.fixed_s: nan is not"),
    ("stages", lambda d: d["stages"]["vocab"].update(bytes_per_item=float("inf")),
     "stages.vocab.bytes_per_item: inf is not a plausible bytes per item"),
    ("data", lambda d: d["jobs"]["train-easy/arithmetic__add_or_sub"].update(seconds_per_problem=float("inf")),
     "jobs.train-easy/arithmetic__add_or_sub.seconds_per_problem: inf is not"),
], ids=["nan-speed", "infinite-speed", "tiny-speed", "zero-speed", "infinite-decoding", "huge-flops",
        "huge-seconds", "nan-fixed", "infinite-bytes", "infinite-data-seconds"])
def test_implausible_measurements_are_refused_by_tprepro_plan_naming_file_and_key(tmp_path, kind, edit, message):
    """Issue 46, gap 9: NaN, Infinity, 0, 1e-300 or 1e300 in a measurement file gave a raw traceback, a job
    priced at 0 s or 10^300 hours, without a warning; the real `tprepro plan` now stops, exit 2, naming the
    file and the key."""
    _measured(tmp_path, kind, edit)
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", str(REPO / "params.yaml")],
                         cwd=tmp_path, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-3000:]
    folder = {"throughput": "throughput/cpu/transformer_tiny.json", "stages": "stages/cpu.json",
              "data": "data/cpu.json"}[kind]
    assert f"results/benchmarks/{folder}: {message}" in out.stderr
    assert "Traceback" not in out.stderr


def test_plausible_measurements_are_planned_with(tmp_path):
    _measured(tmp_path, "throughput", lambda d: None)
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", str(REPO / "params.yaml")],
                         cwd=tmp_path, env=tool_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
