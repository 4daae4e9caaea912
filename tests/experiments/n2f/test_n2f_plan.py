"""A target of an N2F task that n2f.tasks does not list (`snakemake -n results/tables/mathqa.md`)
stops Snakemake's plan with what to add to params.yaml, instead of planning jobs whose first fails."""

import subprocess
import sys

import pytest

from helpers import copy_project, tool_env


@pytest.mark.slow  # a Snakemake subprocess
def test_an_unlisted_tasks_target_says_at_plan_time_what_to_add(tmp_path):
    root = copy_project(tmp_path / "repo")
    plan = subprocess.run([sys.executable, "-m", "snakemake", "-n", "results/tables/mathqa.md"], cwd=root,
                          env=tool_env(), capture_output=True, text=True, timeout=600)
    said = plan.stdout + plan.stderr
    assert plan.returncode != 0 and "Job stats" not in said, said[-3000:]
    assert ("params.yaml: n2f.tasks: add 'mathqa' (it lists ['algolisp']), and set n2f.mathqa.data.train and "
            "n2f.mathqa.data.test to the release's files") in " ".join(said.split()), said[-3000:]


def test_a_listed_task_needs_nothing_and_generated_algolisp_no_release_files():
    from helpers import load_default_params
    from tprepro.experiments.n2f.settings import unlisted_task

    params = load_default_params()
    assert unlisted_task(params, "algolisp", "params.yaml") is None
    params["n2f"]["tasks"] = ["mathqa"]
    assert unlisted_task(params, "algolisp", "p.yaml") == ("p.yaml: n2f.tasks: add 'algolisp' (it lists ['mathqa']) "
                                                           "to make algolisp's outputs")
