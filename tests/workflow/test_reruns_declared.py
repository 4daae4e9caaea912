"""The rerun oracle, declared inputs (issue 54): a settings key of each section a stage reads, and an edit to each
kind of code file a stage runs, plan exactly the jobs that read it, in Snakemake and DVC alike (tests/workflow/
rerun_oracle.py). Each change is planned on its own; the real runs, one per kind with the changes of that kind at
once (`train.steps` and the evaluate package, which rerun the whole project, left out), complete in both tools,
and a second invocation plans nothing."""

from __future__ import annotations

import copy

import pytest
from helpers import write_params
from rerun_oracle import (
    Project,
    check_plans,
    check_runs_converge,
    declaring,
    running,
)

pytestmark = pytest.mark.slow


# --- settings: one key of each section a stage reads

SETTINGS = {  # key -> a new value
    "models.tp_transformer.d_ff": 96,  # a model's size
    "train.steps": 15,
    "evaluate.train_sample": 15,
    "evaluate.batch_size": 64,
    "two_variable.train.steps": 5,
    "n2f.evaluate.max_tuples": 5,
    "summarization.evaluate.beam_size": 1,  # greedy (the micro project's is 2)
}


def with_settings(params: dict, keys) -> dict:
    """`params` with each of `keys` set to its SETTINGS value."""
    changed = copy.deepcopy(params)
    for key in keys:
        *path, leaf = key.split(".")
        node = changed
        for part in path:
            node = node[part]
        assert node.get(leaf) != SETTINGS[key], f"{key} is {SETTINGS[key]} already: no change to plan"
        node[leaf] = SETTINGS[key]
    return changed


def set_up(finished: Project, tmp_path, keys) -> Project:
    project = finished.copy(tmp_path / "project")
    project.params = with_settings(project.params, keys)
    write_params(project.root / "params.yaml", project.params)
    return project


@pytest.mark.parametrize("key", SETTINGS)
def test_a_setting_plans_the_jobs_that_read_it(finished, tmp_path, generate_python, key):
    project = set_up(finished, tmp_path, [key])
    check_plans(project, generate_python, declaring(project.params, key))


# Run to the end together: every key but the two step counts, whose retrains (every Mathematics model; every
# two-variable model) rerun as the model-size key's one retrain does. DVC runs train.steps's in
# test_reruns_content.py (`dvc exp run -S train.steps=18`).
RUN_TOGETHER = [key for key in SETTINGS if key not in ("train.steps", "two_variable.train.steps")]


def test_the_settings_changed_run_to_the_end_and_converge(finished, tmp_path, generate_python):
    project = set_up(finished, tmp_path, RUN_TOGETHER)
    check_plans(project, generate_python, set().union(*(declaring(project.params, key) for key in RUN_TOGETHER)))
    check_runs_converge(project, tmp_path, generate_python)


# --- code: a file of each kind a stage runs

CODE = ("report/published.py",  # a core module the table stages run
        "experiments/two_variable/data.py",  # an experiment's module its data stage runs
        "evaluate/answering.py",  # a module the evaluations run through a package their Stage.code names ("evaluate")
        "experiments/summarization/settings.py")  # imported when the command line starts, run by the stages


def edited(finished: Project, tmp_path, sources) -> Project:
    project = finished.copy(tmp_path / "project")
    for source in sources:
        path = project.root / "src/tprepro" / source
        path.write_text(path.read_text() + "# an edit that changes no behaviour\n")
    return project


@pytest.mark.parametrize("source", CODE)
def test_a_source_edit_plans_the_jobs_that_run_it(finished, tmp_path, generate_python, source):
    project = edited(finished, tmp_path, [source])
    check_plans(project, generate_python, running(project.params, source))


RUN_TO_THE_END = "experiments/summarization/settings.py"  # the subtlest kind (imported at start-up, run by the
# stages) and the fewest jobs (7): each edit reruns through its stage's code digest alike, and the others rerun
# 12 to 30 jobs, the evaluate package every training


def test_a_source_edited_runs_to_the_end_and_converges(finished, tmp_path, generate_python):
    project = edited(finished, tmp_path, [RUN_TO_THE_END])
    check_plans(project, generate_python, running(project.params, RUN_TO_THE_END))
    check_runs_converge(project, tmp_path, generate_python)
