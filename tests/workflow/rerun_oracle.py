"""The rerun oracle's kit (issue 54): what a change to the finished micro project (tests/finished_project.py: every
experiment, the real generator, both tools) must rerun, derived from the job graph, and what Snakemake and DVC plan
and do.

For each change a researcher makes after a first run, the jobs reading what changed are derived from the job graph
(a settings key: the jobs whose Stage declares a key covering it; a source file: the jobs whose Stage code holds it;
an output's new content: the jobs that read it); `dvc status` must name exactly those, and `snakemake -n` exactly
those and everything downstream of them. Each tool's real run then completes with every output present, and a
second invocation plans nothing. The finished project's own run checks that each stage's declared params keys and
code are what its commands read and run (tests/finished_project.py, tests/pipeline_kit.py). The tests:
test_reruns_declared.py (settings and code) and test_reruns_content.py (new content, what leaves content alone, an
older experiment applied).
"""

from __future__ import annotations

from pathlib import Path

from finished_project import Project
from pipeline_kit import NOTHING, dvc, dvc_plans, snakemake

from tprepro.experiments import stage as declared_stage
from tprepro.job_graph import Job, jobs, upstream


# --- what each tool plans, and what the job graph says it must


def snakemake_plans(root: Path, generate_python) -> set[str]:
    """The first output of every job a Snakemake dry run plans (rule all left out)."""
    planned = set()
    for line in snakemake(root, generate_python, "-n").splitlines():
        if line.startswith("    output: "):
            planned.add(line.removeprefix("    output: ").split(", ")[0])
    return planned


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
