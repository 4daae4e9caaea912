"""The rerun oracle's kit (issue 54): one finished micro project (every experiment, the real generator, both
tools), what a change must rerun, derived from the job graph, and what Snakemake and DVC plan and do.

For each change a researcher makes after a first run, the jobs reading what changed are derived from the job graph
(a settings key: the jobs whose Stage declares a key covering it; a source file: the jobs whose Stage code holds it;
an output's new content: the jobs that read it); `dvc status` must name exactly those, and `snakemake -n` exactly
those and everything downstream of them. Each tool's real run then completes with every output present, and a
second invocation plans nothing. The finished project's own run checks that each stage's declared params keys and
code are what its commands read and run (tests/pipeline_kit.py). The tests: test_reruns_declared.py (settings and
code) and test_reruns_content.py (new content, what leaves content alone, an older experiment applied).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import copy_project, micro_n2f, write_params
from pipeline_kit import (
    dvc,
    micro_params,
    misdeclared_params,
    run,
    snakemake,
    undeclared_code,
)

from tprepro.experiments import stage as declared_stage
from tprepro.job_graph import Job, jobs, upstream
from tprepro.params import load_params

NOTHING = "Nothing to be done"


def oracle_params() -> dict:
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
    wait and read it; tests change copies only). A failed build is reported to every worker, not built again."""
    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp  # the session's own folder
    with open(shared / "rerun-oracle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = shared / "rerun-oracle" / "finished"
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
    return Project(root, oracle_params())


def _build(root: Path, generate_python) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    copy_project(root)
    params = oracle_params()
    write_params(root / "params.yaml", params)
    audit = root.parent / "audit.jsonl"
    snakemake(root, generate_python, TPREPRO_AUDIT_LOG=str(audit))
    assert undeclared_code(audit) == {}  # each stage's Stage.code covers the code its commands ran
    assert misdeclared_params(audit, load_params(root / "params.yaml")) == {}  # and its params, the keys they read
    run(["git", "init", "-q"], root, generate_python)
    run(["make", "--no-print-directory", "dvc-commit", f"BIN={Path(sys.executable).parent}"], root, generate_python)
    for setting in (["user.name", "tprepro tests"], ["user.email", "tests@tprepro.invalid"]):
        run(["git", "config", *setting], root, generate_python)
    run(["git", "add", "-A"], root, generate_python)
    run(["git", "commit", "-q", "-m", "the finished micro project"], root, generate_python)
    assert NOTHING in snakemake(root, generate_python, "-n")
    assert dvc_plans(root, generate_python) == set()


# --- what each tool plans, and what the job graph says it must


def snakemake_plans(root: Path, generate_python) -> set[str]:
    """The first output of every job a Snakemake dry run plans (rule all left out)."""
    planned = set()
    for line in snakemake(root, generate_python, "-n").splitlines():
        if line.startswith("    output: "):
            planned.add(line.removeprefix("    output: ").split(", ")[0])
    return planned


def dvc_plans(root: Path, generate_python) -> set[str]:
    """The stages `dvc status` names (matrix stages as `name@values`)."""
    shown = dvc(root, generate_python, "status", "--json").strip().splitlines()[-1]
    return set(json.loads(shown))


def first_outputs(chosen: set[Job]) -> set[str]:
    return {job.outputs[0] for job in chosen}


def downstream(params: dict, changed: set[Job]) -> set[Job]:
    """`changed` and every job that reads, directly or not, what they write."""
    before = upstream(jobs(params))
    closure, grew = set(changed), True
    while grew:
        found = {job for job, writers in before.items() if closure & set(writers)} - closure
        closure |= found
        grew = bool(found)
    return closure


def readers(params: dict, paths: set[str]) -> set[Job]:
    """The jobs that read one of `paths` (a dep that is it, or a folder holding it)."""
    return {job for job in jobs(params)
            if any(path == dep or path.startswith(f"{dep}/") for path in paths for dep in job.deps)}


def declaring(params: dict, key: str) -> set[Job]:
    """The jobs whose Stage declares a params key covering dotted `key` (its wildcards filled in by the job's)."""
    found = set()
    for job in jobs(params):
        values = {name: value for name, value in job.item}
        for declared in declared_stage(job.stage).params_keys:
            try:
                instance = declared.format(**values)
            except KeyError:
                continue
            if key == instance or key.startswith(f"{instance}."):
                found.add(job)
    return found


def running(params: dict, source: str) -> set[Job]:
    """The jobs whose Stage code holds source file `source` (relative to src/tprepro)."""
    from tprepro.experiments import code_files

    return {job for job in jobs(params) if f"src/tprepro/{source}" in code_files(job.stage)}


# --- the checks


def check_plans(project: Project, generate_python, changed: set[Job]) -> None:
    """DVC names exactly the `changed` jobs; Snakemake plans them and everything downstream of them."""
    assert changed, "the change must rerun something"
    assert dvc_plans(project.root, generate_python) == {job.dvc_name for job in changed}
    assert snakemake_plans(project.root, generate_python) == first_outputs(downstream(project.params, changed))


def check_runs_converge(project: Project, tmp_path: Path, generate_python) -> None:
    """Each tool, from the changed project: its real run completes with every output present, and a second
    invocation plans nothing (each on its own copy)."""
    by_dvc = project.copy(tmp_path / "by-dvc")
    dvc(by_dvc.root, generate_python, "repro")
    assert dvc_plans(by_dvc.root, generate_python) == set()
    check_outputs(by_dvc)
    snakemake(project.root, generate_python)
    assert NOTHING in snakemake(project.root, generate_python, "-n")
    check_outputs(project)


def check_outputs(project: Project) -> None:
    missing = [out for job in jobs(project.params) for out in job.outputs if not (project.root / out).exists()]
    assert missing == []


def check_nothing_planned(project: Project, generate_python) -> None:
    assert NOTHING in snakemake(project.root, generate_python, "-n")
    assert dvc_plans(project.root, generate_python) == set()
    assert NOTHING in snakemake(project.root, generate_python)  # and a real invocation does nothing
