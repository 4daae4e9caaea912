"""The rerun oracle, declared inputs (issue 54): a settings key of each section a stage reads, and an edit to each
kind of code file a stage runs, plan exactly the jobs that read it, in Snakemake and DVC alike (tests/workflow/
rerun_oracle.py). Each change is planned on its own; one real run with the settings and a source edit at once
(`train.steps` and the evaluate package, which rerun the whole project, left out) completes in both tools, and a
second invocation plans nothing."""

from __future__ import annotations

import copy

import pytest
from finished_project import Project
from helpers import write_params
from rerun_oracle import check_plans, check_runs_converge, declaring, running

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


# --- code: a file of each kind a stage runs

CODE = ("report/published.py",  # a core module the table stages run
        "experiments/two_variable/data.py",  # an experiment's module its data stage runs
        "evaluate/answering.py",  # a module the evaluations run through a package their Stage.code names ("evaluate")
        "experiments/summarization/settings.py")  # imported when the command line starts, run by the stages


def edit(project: Project, sources) -> Project:
    """`project` with each of `sources` (relative to src/tprepro) edited in a way that changes no behaviour."""
    for source in sources:
        path = project.root / "src/tprepro" / source
        path.write_text(path.read_text() + "# an edit that changes no behaviour\n")
    return project


@pytest.mark.parametrize("source", CODE)
def test_a_source_edit_plans_the_jobs_that_run_it(finished, tmp_path, generate_python, source):
    project = edit(finished.copy(tmp_path / "project"), [source])
    check_plans(project, generate_python, running(project.params, source))


# --- run to the end, together: the settings (but the two step counts, whose retrains of every Mathematics or
# two-variable model rerun as the model-size key's one retrain does; DVC runs train.steps's in test_reruns_content.py's
# `dvc exp run`) and one source edit, the subtlest kind (imported at start-up, run by the stages) with the fewest
# jobs (7; each edit reruns through its stage's code digest alike, the others 12 to 30 jobs, the evaluate package
# every training)

RUN_TOGETHER = [key for key in SETTINGS if key not in ("train.steps", "two_variable.train.steps")]
EDIT_RUN = "experiments/summarization/settings.py"


def test_the_settings_and_a_source_changed_run_to_the_end_and_converge(finished, tmp_path, generate_python):
    project = edit(set_up(finished, tmp_path, RUN_TOGETHER), [EDIT_RUN])
    changed = set().union(*(declaring(project.params, key) for key in RUN_TOGETHER), running(project.params, EDIT_RUN))
    check_plans(project, generate_python, changed)
    check_runs_converge(project, tmp_path, generate_python)
