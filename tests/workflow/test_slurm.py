"""The pipeline on a real single-node SLURM, through profiles/slurm; and `snakemake --report`.

tests/slurm/local_slurm.sh starts slurmctld, slurmd and munged (Debian packages, `make
system-deps`) with one fake GPU. The Mathematics Dataset pipeline (target `tables`) and the
AlgoLisp N2F pipeline run once through the SLURM profile and once locally on the same params
and data; the training jobs must have been SLURM jobs with a GPU, and the tables must be equal.
"""

import base64
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import REPO, copy_project, micro_n2f, tool_env, write_params
from pipeline_kit import check_results, micro_params

pytestmark = pytest.mark.slow

SCRIPT = REPO / "tests" / "slurm" / "local_slurm.sh"
TARGET = "tables"  # the Mathematics Dataset pipeline, whatever else `all` holds
TARGETS = [TARGET, "results/tables/algolisp.md"]  # ... and the AlgoLisp N2F pipeline
GPU_RULES = {"train", "evaluate", "n2f_train", "n2f_evaluate"}
TIMEOUT = 900  # seconds before the SLURM run is interrupted with SIGINT
RESULTS = ["results/tables/mathematics_modules.csv", "results/tables/table1.csv", "results/metrics.json",
           "results/tables/algolisp.csv", "results/algolisp_metrics.json", "results/n2f/algolisp_quality.json"]
REPORTED = {"results/tables/table1.csv": "table1.rst", "results/tables/mathematics_modules.csv": "modules.rst",
            "results/figures/mathematics_modules.png": "figure.rst",
            "results/tables/table1.html": "table1.rst", "results/tables/algolisp.html": "n2f.rst"}  # rendered tables


def slurm_params() -> dict:
    """The micro configuration with one module (fewer data jobs to queue), plus micro AlgoLisp with two of its
    models (TP-N2F and an LSTM baseline: fewer jobs to queue; every model's command is the same stage's)."""
    params = micro_n2f(micro_params(), ("algolisp",))
    params["n2f"]["models"] = ["tp_n2f", "lstm2lstm"]
    params["grid"].update(modules=["arithmetic__add_or_sub"], extrapolation_modules=["arithmetic__add_or_sub_big"])
    return params


def train_run_names(params: dict) -> set[str]:
    mathematics = {f"{m}-s{s}" for m in params["grid"]["models"] for s in params["grid"]["seeds"]}
    return mathematics | {f"algolisp/{m}-s{s}" for m in params["n2f"]["models"] for s in params["n2f"]["seeds"]}


def run(cmd: list, cwd: Path, env: dict, timeout: float) -> str:
    """Run `cmd`; on timeout send SIGINT (Snakemake then cancels its SLURM jobs) and fail."""
    proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"{' '.join(map(str, cmd))} interrupted after {timeout}s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{out[-6000:]}"
    return out


@pytest.fixture(scope="module")
def slurm_conf():
    """A running local SLURM (its slurm.conf); stopped by PID afterwards, whatever happened."""
    state = Path(tempfile.mkdtemp(prefix="slurm.", dir="/tmp"))  # short: the munge socket lives here
    try:
        run([SCRIPT, "start", state], REPO, tool_env(), timeout=120)
        yield state / "slurm.conf"
    finally:
        subprocess.run([SCRIPT, "stop", state], timeout=120, check=False)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, slurm_conf, generate_python):
    """The SLURM run, its jobs as `scontrol` saw them, and the local run on the same data."""
    params = slurm_params()
    env = tool_env(TPREPRO_GENERATE_PYTHON=str(generate_python), SLURM_CONF=str(slurm_conf))
    cluster = copy_project(tmp_path_factory.mktemp("slurm") / "repo")
    write_params(cluster / "params.yaml", params)
    log = run([sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--jobs", "4",
               "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2",
               *TARGETS], cluster, env, TIMEOUT)
    submitted = re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/", log)
    jobs = {job_id: {"rule": rule, "scontrol": run(["scontrol", "-o", "show", "job", job_id], cluster, env, 60)}
            for job_id, rule in submitted}

    local = copy_project(tmp_path_factory.mktemp("local") / "repo")
    write_params(local / "params.yaml", params)
    shutil.copytree(cluster / "data", local / "data")  # generated data, mtimes kept: not regenerated
    run([sys.executable, "-m", "snakemake", "--cores", "2", *TARGETS], local, env, TIMEOUT)
    print("SLURM jobs:", ", ".join(f"{job_id} ({job['rule']})" for job_id, job in jobs.items()))
    return {"params": params, "cluster": cluster, "local": local, "jobs": jobs, "env": env}


def train_runs(root: Path, params: dict) -> dict:
    """Training run name -> tags, over the MLflow experiments of every experiment of `params`."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    ids = [e.experiment_id for e in client.search_experiments() if e.name.startswith(params["mlflow"]["prefix"] + "-")]
    runs = client.search_runs(ids)
    return {r.info.run_name: r.data.tags for r in runs if r.data.tags.get("stage") == "train"}


def test_every_stage_ran_as_a_slurm_job(runs):
    """Every rule but split_index, a localrule (it reads a few manifests on the submitting host)."""
    rules = {job["rule"] for job in runs["jobs"].values()}
    assert rules == {"data", "vocab", "train", "evaluate", "tables",
                     "n2f_data", "n2f_quality", "n2f_train", "n2f_evaluate", "n2f_tables"}
    for job in runs["jobs"].values():
        assert "JobState=COMPLETED" in job["scontrol"]


def test_training_jobs_were_slurm_jobs_with_a_gpu(runs):
    params, jobs = runs["params"], runs["jobs"]
    tags = train_runs(runs["cluster"], params)
    assert set(tags) == train_run_names(params)
    train_jobs = {job_id for job_id, job in jobs.items() if job["rule"] in ("train", "n2f_train")}
    assert {t["slurm.job_id"] for t in tags.values()} == train_jobs
    for run_tags in tags.values():
        assert run_tags["slurm.partition"] == params["cluster"]["train"]["partition"]
        assert run_tags["slurm.step_gpus"] == run_tags["cuda_visible_devices"] == "0"  # the fake GPU
    for job in jobs.values():
        gpu_requested = "TresPerJob=gres:gpu:1" in job["scontrol"]
        assert gpu_requested == (job["rule"] in GPU_RULES), job["scontrol"]
    local_tags = train_runs(runs["local"], params)
    assert not any(k.startswith("slurm.") for t in local_tags.values() for k in t)


def test_slurm_results_equal_local_results(runs):
    import torch

    from tprepro.train.checkpoint import load_checkpoint

    cluster, local, params = runs["cluster"], runs["local"], runs["params"]
    check_results(cluster, params)
    for path in RESULTS:
        assert (cluster / path).read_bytes() == (local / path).read_bytes(), path
    outputs = {f"{m}-s{s}": (f"mathematics/eval/{m}-s{s}.csv", f"mathematics/models/{m}-s{s}/model.pt")
               for m in params["grid"]["models"] for s in params["grid"]["seeds"]}
    outputs.update({f"algolisp/{m}": (f"n2f/eval/algolisp/{m}-s1.csv", f"n2f/models/algolisp/{m}-s1/model.pt")
                    for m in params["n2f"]["models"]})
    for run_name, (evaluation, model) in outputs.items():
        evals = [(root / evaluation).read_bytes() for root in (cluster, local)]
        assert evals[0] == evals[1], run_name
        weights = [load_checkpoint(root / model)["model"] for root in (cluster, local)]
        assert weights[0].keys() == weights[1].keys()
        assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0]), run_name  # bit for bit


def test_report_holds_every_table_and_figure_with_its_caption(runs):
    root = runs["cluster"]
    report = root / "results" / "report.html"
    run([sys.executable, "-m", "snakemake", "--report", report, *TARGETS], root, runs["env"], 300)
    html = report.read_text()
    print("report:", report)
    for path, caption in REPORTED.items():
        text = (REPO / "workflow" / "report" / caption).read_text()
        first = text.split("** ", 1)[-1].splitlines()[0]  # after the bold title, if any
        assert first.split("``")[0].strip() in html, caption  # up to any templated part
        name = Path(path).name
        embedded = re.search(rf"filename={re.escape(name)};base64,([A-Za-z0-9+/=]+)", html)
        assert embedded and base64.b64decode(embedded.group(1)) == (root / path).read_bytes(), name


# A data job of about 2 CPU-minutes at the measured speed (11,000 problems at about 11 ms each,
# results/benchmarks/data/cpu.json) given a runtime of 1 minute on purpose. Its retries: more than the profile's
# 2 (for nodes at most 2x slower than the plan's runtimes cover), as a test machine's load stretches wall time
# (on 2 cores at a load average of 15, attempts of 1 to 5 minutes made 6 of 11 shards of 1,000, the sixth the
# rest). Shards of 250 (about 3 s each): with shards of 1,000, a CI machine's loaded attempts of 1 to 3 minutes
# each spent their time starting, none finished a shard, and the fourth made all 11 (nothing to keep).
RETRIED = ("train-easy", "probability__swr_p_sequence", 11_000, 250)
RETRIES = 8


def test_a_data_job_killed_at_its_limit_is_retried_with_a_longer_one_and_keeps_its_shards(
        tmp_path, slurm_conf, generate_python):
    """Issue 55: SLURM kills the job at its limit (TIMEOUT); the profile's `retries` submits it again with
    `attempt` times the runtime (tprepro.workflow.stage_resources), and the retry makes only the shards the
    killed attempt did not finish; the dataset is whole."""
    from tprepro.data.shards import open_dataset

    split, module, problems, rows_per_shard = RETRIED
    params = slurm_params()
    params["grid"]["modules"] = [module]
    params["interpret"]["module"] = module
    params["data"].update(train_per_module=problems, rows_per_shard=rows_per_shard)
    params["cluster"]["data"].update(runtime=1, cpus=1)
    root = copy_project(tmp_path / "repo")
    write_params(root / "params.yaml", params)
    env = tool_env(TPREPRO_GENERATE_PYTHON=str(generate_python), SLURM_CONF=str(slurm_conf))
    target = f"data/mathematics/{split}/{module}"
    log = run([sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--jobs", "1", "--retries",
               str(RETRIES), "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2",
               target], root, env, 3 * TIMEOUT)
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", log)
    shown = [run(["scontrol", "-o", "show", "job", job_id], root, env, 60) for job_id in submitted]
    states = [(re.search(r"JobState=(\w+)", s).group(1), re.search(r"TimeLimit=(\S+)", s).group(1)) for s in shown]
    print("SLURM attempts:", states)
    assert len(states) >= 2 and states[0] == ("TIMEOUT", "00:01:00"), log[-3000:]
    assert states[-1] == ("COMPLETED", f"00:0{len(states)}:00")  # attempt k asks for k x the runtime
    assert all(state == "TIMEOUT" for state, _ in states[:-1])
    job_log = (root / "logs" / "data" / split / f"{module}.log").read_text()
    kept = re.search(rf"{split}/{module}: (\d+) of (\d+) shards kept from an interrupted earlier run", job_log)
    assert kept and 0 < int(kept.group(1)) < int(kept.group(2)) == problems // rows_per_shard, job_log[-2000:]
    assert open_dataset(root / target).rows == problems  # every shard verified against its manifest
