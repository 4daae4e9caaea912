"""SLURM settings: params.yaml `cluster:` reaches the rules' resources; job IDs become MLflow tags."""

import re
import subprocess
import sys

import pytest
import yaml

from helpers import REPO, copy_project, load_default_params, tool_env, write_params
from tprepro.params import validate_params
from tprepro.errors import TpreproError
from tprepro.tracking.provenance import JOB_ENVIRONMENT, job_environment_tags


def test_job_environment_tags_record_the_slurm_job_and_its_gpus(monkeypatch):
    for name in JOB_ENVIRONMENT.values():
        monkeypatch.delenv(name, raising=False)
    assert job_environment_tags() == {}
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_STEP_GPUS", "0,1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert job_environment_tags() == {"slurm.job_id": "42", "slurm.step_gpus": "0,1",
                                      "cuda_visible_devices": "0,1"}


@pytest.mark.parametrize("edit, key", [
    (lambda c: c["train"].update(gpus=-1), "cluster.train.gpus"),
    (lambda c: c["train"].update(memory=4000), "cluster.train.memory"),
    (lambda c: c.pop("evaluate"), "cluster.evaluate"),
    (lambda c: c["data"].update(partition=3), "cluster.data.partition"),
])
def test_cluster_errors_name_the_key(edit, key):
    params = load_default_params()
    edit(params["cluster"])
    with pytest.raises(TpreproError, match=re.escape(f"params.yaml: {key}")):
        validate_params(params)


def test_the_default_profile_never_overrides_the_slurm_profile():
    """Snakemake loads profiles/default after --profile, so the default may hold only settings the
    slurm profile shares, with the same values (a latency-wait or cores there would win on clusters)."""
    default = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert default and {key: slurm.get(key) for key in default} == default


def test_the_slurm_profile_gives_each_rule_its_cluster_resources(tmp_path):
    root = copy_project(tmp_path / "repo")
    params = load_default_params()
    params["cluster"]["train"].update(partition="big_gpu", runtime=2880, mem_mb=64000, cpus=8, gpus=2)
    params["cluster"]["data"].update(partition=None)
    write_params(root / "params.yaml", params)
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "-n", "tables"],
        cwd=root, env=tool_env(), capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    resources = {}  # rule -> its (last) resources line
    for rule, line in re.findall(r"^rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", out.stdout, re.M):
        resources[rule] = dict(item.split("=", 1) for item in line.split(", "))
    train = resources["train"]
    assert (train["slurm_partition"], train["runtime"], train["mem_mb"], train["cpus_per_task"], train["gpu"]) \
        == ("big_gpu", "2880", "64000", "8", "2")
    assert resources["evaluate"]["gpu"] == "1" and resources["evaluate"]["slurm_partition"] == "gpu"
    assert "gpu" not in resources["data"] and "slurm_partition" not in resources["data"]


def test_a_workstation_run_shows_no_slurm_partition_or_gpu(tmp_path):
    root = copy_project(tmp_path / "repo")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "tables"], cwd=root, env=tool_env(),
                         capture_output=True, text=True)  # the default (workstation) profile
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Using workflow specific profile profiles/default" in out.stdout + out.stderr
    lines = re.findall(r"^    resources: (.*)$", out.stdout, re.M)
    assert lines and not any("slurm_partition" in line or "gpu=" in line for line in lines), lines[:3]
    assert any("runtime=" in line for line in lines)  # the rest of the cluster settings stay visible
