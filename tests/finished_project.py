"""The micro project run to the end once per test session (every experiment, the real generator, Snakemake's run
recorded for DVC as `make run` records it), shared by the end-to-end tests that start from a finished run: the
Mathematics pipeline's checks (tests/experiments/mathematics/test_pipeline.py) and the rerun oracle
(tests/workflow/rerun_oracle.py). Tests change copies only."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import copy_project, micro_n2f, write_params
from pipeline_kit import NOTHING, dvc_plans, micro_params, misdeclared_params, run, snakemake, undeclared_code

from tprepro.params import load_params


def finished_params() -> dict:
    """The micro project, with an AlgoLisp task of two models, and one model file over 1 MB (Snakemake does not
    checksum such an input: its reruns follow times alone)."""
    params = micro_n2f(micro_params(), tasks=("algolisp",))
    params["n2f"]["models"] = ["tp_n2f", "lstm2lstm"]
    params["models"]["tp_transformer"] = {"preset": "tp_transformer_tiny"}
    return params


@dataclass
class Project:
    root: Path
    params: dict

    def copy(self, dest: Path, keep_times: bool = True) -> "Project":
        """A copy at `dest`; with keep_times, every file keeps its mtime (as the finished project is)."""
        subprocess.run(["cp", "-a" if keep_times else "-r", str(self.root), str(dest)], check=True)
        return Project(dest, self.params)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, generate_python) -> Project:
    """The micro project run to the end by Snakemake and recorded for DVC (`make dvc-commit`), in a git commit:
    built once per test session and shared by its xdist workers (the first builds it under a lock, the others
    wait and read it). A failed build is reported to every worker, not built again."""
    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp  # the session's own folder
    with open(shared / "finished-project.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = shared / "finished-project" / "repo"
        built, failed = root.parent / "built", root.parent / "failed"
        if failed.exists():
            pytest.fail(f"building the finished micro project failed (another worker):\n{failed.read_text()}")
        if not built.exists():
            try:
                _build(root, generate_python)
            except BaseException:
                failed.write_text(traceback.format_exc())
                raise
            built.touch()
    return Project(root, finished_params())


def _build(root: Path, generate_python) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    copy_project(root)
    write_params(root / "params.yaml", finished_params())
    audit = root.parent / "audit.jsonl"
    snakemake(root, generate_python, TPREPRO_AUDIT_LOG=str(audit))
    assert undeclared_code(audit) == {}  # each stage's Stage.code covers the code its commands ran
    assert misdeclared_params(audit, load_params(root / "params.yaml")) == {}  # and its params, the keys they read
    assert NOTHING in snakemake(root, generate_python, "-n")

    # `make run`'s last step records the run for DVC without rewriting any output: afterwards both tools call
    # everything up to date and every output keeps its bytes and mtime (issue 23).
    run(["git", "init", "-q"], root, generate_python)
    made = outputs_as_made(root)
    run(["make", "--no-print-directory", "dvc-commit", f"BIN={Path(sys.executable).parent}"], root, generate_python)
    assert outputs_as_made(root) == made
    for setting in (["user.name", "tprepro tests"], ["user.email", "tests@tprepro.invalid"]):
        run(["git", "config", *setting], root, generate_python)
    run(["git", "add", "-A"], root, generate_python)
    run(["git", "commit", "-q", "-m", "the finished micro project"], root, generate_python)
    assert NOTHING in snakemake(root, generate_python, "-n")
    assert dvc_plans(root, generate_python) == set()


def outputs_as_made(root: Path) -> dict[Path, tuple[int, bytes]]:
    """Every file the pipeline made (data, models, evaluations, results): its mtime and bytes."""
    return {path: (path.stat().st_mtime_ns, path.read_bytes()) for folder in ("data", "mathematics", "results")
            for path in sorted((root / folder).rglob("*")) if path.is_file()}
