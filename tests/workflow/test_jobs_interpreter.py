"""Snakemake's jobs run the tprepro beside the interpreter running Snakemake (tprepro.workflow.
jobs_use_this_interpreter): `<venv>/bin/snakemake` with a PATH that lacks the venv runs a real job to
its end, where every job exited 127 inside its log (issue 54), and its command is still dvc.yaml's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_project, write_params
from pipeline_kit import micro_params

pytestmark = pytest.mark.slow  # a real Snakemake invocation and data job (~30 s)

TARGET = "data/mathematics/train-easy/arithmetic__add_or_sub"


def test_venv_snakemake_runs_its_own_tprepro_without_the_venv_on_path(tmp_path, generate_python):
    root = copy_project(tmp_path / "repo")
    write_params(root / "params.yaml", micro_params())
    venv_bin = Path(sys.executable).parent
    path = os.pathsep.join(folder for folder in os.environ["PATH"].split(os.pathsep)
                           if Path(folder).resolve() != venv_bin.resolve())
    assert subprocess.run(["bash", "-c", "command -v tprepro"], env={"PATH": path}).returncode != 0
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "MLFLOW_TRACKING_URI",
                                                                         "TPREPRO_PARAMS")}
    result = subprocess.run([str(venv_bin / "snakemake"), "--cores", "1", TARGET], cwd=root, capture_output=True,
                            text=True, timeout=600, env={**env, "PATH": path, "TPREPRO_GENERATE_PYTHON": generate_python})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert (root / TARGET / "manifest.json").is_file()
    log = (root / "logs/data/train-easy/arithmetic__add_or_sub.log").read_text()
    assert "command not found" not in log and "arithmetic__add_or_sub" in log, log[-2000:]
    assert f"tprepro data --split train-easy --module arithmetic__add_or_sub --out {TARGET}" in result.stdout + result.stderr
