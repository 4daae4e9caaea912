"""The job graph: the stages expanded once into jobs; the stage-level view workflow.py derives rule inputs
from agrees with the job-level view the plan schedules."""

import pytest

from helpers import REPO, load_default_params
from tprepro.job_graph import jobs, stage_nodes, upstream, upstream_stages, writer_of
from tprepro.params import load_params


def test_the_jobs_of_the_default_params_write_distinct_outputs_and_wait_for_their_inputs():
    params = load_default_params()
    found = jobs(params)
    outputs = [output for job in found for output in job.outputs]
    assert len(outputs) == len(set(outputs))
    before = upstream(found)
    train = next(job for job in found if job.rule == "train")
    assert {job.rule for job in before[train]} == {"vocab", "split_index"}
    table = next(job for job in found if job.rule == "tables")
    assert {job.rule for job in before[table]} == {"evaluate", "train"}
    order = {job: i for i, job in enumerate(found)}
    assert all(order[first] < order[job] for job in found for first in before[job])  # registry order is a topological one


@pytest.mark.parametrize("config", ["params.yaml", "workflow/configs/cpu.yaml", "workflow/configs/paper.yaml"])
def test_a_stage_waits_for_exactly_the_stages_its_jobs_wait_for(config):
    """Rule inputs (stage level) and the plan's schedule (job level) see one graph."""
    params = load_params(str(REPO / config))
    nodes, found = stage_nodes(params), jobs(params)
    before = upstream(found)
    for node in nodes:
        own = [job for job in found if job.stage == node.stage]
        assert own, node.stage
        waited = {first.stage for job in own for first in before[job]}
        assert waited == upstream_stages(node, nodes), node.stage


@pytest.mark.parametrize("config", ["params.yaml", "workflow/configs/paper.yaml"])
def test_the_stage_view_finds_the_job_writing_each_file_a_job_reads(config):
    params = load_params(str(REPO / config))
    nodes, found = stage_nodes(params), jobs(params)
    written = {output: job for job in found for output in job.outputs}
    for dep in {dep for job in found for dep in job.deps if dep in written}:
        stage, values = writer_of(dep, nodes)
        assert (stage, sorted(value for _, value in values)) == (written[dep].stage,
                                                              sorted(value for _, value in written[dep].rule_wildcards))


def test_kept_wildcards_stay_patterns_and_the_rest_are_expanded():
    params = load_default_params()
    train = next(node for node in stage_nodes(params) if node.stage == "train")
    kept = train.values(params, keep={"model"})
    assert {values["model"] for values in kept} == {"{model}"}
    assert [values["seed"] for values in kept] == [str(seed) for seed in params["grid"]["seeds"]]
    assert len(train.values(params)) == len(params["grid"]["models"]) * len(params["grid"]["seeds"])


def test_each_jobs_wildcards_carry_the_names_of_its_snakemake_rule():
    """The plan finds a Snakemake job's entry by its wildcards' names and values (workflow.stage_resources): a
    foreach stage's value goes under the name its rule gives it (summarization-data's {dataset})."""
    import re

    from tprepro.workflow import stage_outputs

    params = load_default_params()
    for job in jobs(params):
        rule_output = str(stage_outputs(job.stage)[0])
        assert [name for name, _ in job.rule_wildcards] == re.findall(r"\{(\w+)\}", rule_output), job.name
