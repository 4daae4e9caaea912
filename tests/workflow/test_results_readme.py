"""results/README.md stays true: it names every file the pipeline writes under results/ (the stage
registry's outputs, as tests/workflow/test_dag_equality.py keeps them equal to the Snakefile's and
dvc.yaml's), names no file that nothing writes, and what it calls git-ignored is."""

import re
import subprocess

from helpers import REPO

README = REPO / "results" / "README.md"
# Written outside the stage registry: by `make run`'s report step, benchmarks/*.py and the tests.
ELSEWHERE = {"report.html": "Makefile", "benchmarks/*.json": "benchmarks/", "screenshots/": "tests/helpers.py"}


def pipeline_outputs() -> set[str]:
    """Every stage output under results/, relative to it, `${item.task}` written `<task>`."""
    from tprepro.experiments import experiments

    paths = {str(path) for experiment in experiments().values() for stage in experiment.stages
             for dvc in stage.dvc for path in dvc.written}
    return {re.sub(r"\$\{item\.(\w+)\}", r"<\1>", path.removeprefix("results/"))
            for path in paths if path.startswith("results/")}


def listed() -> set[str]:
    """The files of the README's table: the backticked names of its first column."""
    rows = [line.split("|")[1] for line in README.read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([^`]+)`", row)}


def test_the_results_readme_lists_every_file_the_pipeline_writes_there_and_no_other():
    outputs = pipeline_outputs()
    assert outputs - listed() == set(), "add these to results/README.md"
    assert listed() - outputs - set(ELSEWHERE) == set(), "nothing writes these: drop them from results/README.md"


def test_what_the_results_readme_calls_git_ignored_is():
    assert "git-ignored" in README.read_text()
    examples = sorted(path.replace("<task>", "algolisp") for path in pipeline_outputs() | {"report.html", "screenshots/x.png"})
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *(f"results/{path}" for path in examples)],
                             cwd=REPO, capture_output=True, text=True).stdout.split()
    assert sorted(ignored) == [f"results/{path}" for path in examples]
