"""A params file's plan: its jobs are the DAG's, SLURM runtimes derive from the estimate, a job above
its limit is planned as requeued allocations."""

import math

import pytest

from helpers import REPO, load_default_params
from plan_kit import write_stage_rates, write_throughput
from tprepro.job_graph import jobs
from tprepro.plan.plan import MARGIN, MIN_RUNTIME, WARNING_MINUTES, make_plan
from tprepro.plan.speeds import load_measurements
from tprepro.plan.work import work
from tprepro.work import Work


@pytest.mark.parametrize("config", ["params.yaml", "workflow/configs/paper.yaml"])
def test_every_job_says_what_it_does_and_its_family_is_a_cluster_section(config):
    from tprepro.params import load_params

    params = load_params(str(REPO / config))
    for job in jobs(params):
        assert isinstance(work(params, job.stage, job.values), Work)
        assert job.family is None or job.family in params["cluster"], job.stage


def _slow_training(tmp_path, runtime=None, time_limit=None, max_requeues=3):
    params = load_default_params()
    params["cluster"]["train"].update(runtime=runtime, device="h100")
    if time_limit:
        params["cluster"]["train"]["time_limit"] = time_limit
    params["train"]["max_requeues"] = max_requeues
    write_throughput(tmp_path, "h100", "transformer_tiny", 64_000 / (5 * 3600))  # 1,000 x 64 samples in 5 hours
    return params, load_measurements(tmp_path)


def _train_job(plan, model="transformer"):
    return next(p for p in plan.jobs if p.job.rule == "train" and p.job.values["model"] == model)


def test_a_runtime_the_params_leave_unset_is_the_estimate_with_the_margin(tmp_path):
    params, measured = _slow_training(tmp_path)
    planned = _train_job(make_plan(params, measurements=measured))
    assert planned.estimate.seconds == pytest.approx(5 * 3600)
    assert planned.runtime == math.ceil(5 * 3600 * MARGIN / 60) and planned.segments == 1
    tp = _train_job(make_plan(params, measurements=measured), "tp_transformer")
    assert tp.estimate.status == "unmeasured" and tp.runtime is None  # nothing to derive it from


def test_a_runtime_the_params_set_wins_and_a_longer_training_is_requeued(tmp_path):
    params, measured = _slow_training(tmp_path, runtime=120)
    planned = _train_job(make_plan(params, measurements=measured))
    assert planned.runtime == 120 and "params" in planned.runtime_source
    assert planned.segments == math.ceil(5 * 3600 / ((120 - WARNING_MINUTES) * 60)) == 3
    assert planned.note.startswith("requeued: 3 allocations of 120 min") and "max_requeues" not in planned.note


def test_a_partition_limit_caps_the_derived_runtime_and_too_many_requeues_are_flagged(tmp_path):
    params, measured = _slow_training(tmp_path, time_limit=60, max_requeues=2)
    plan = make_plan(params, measurements=measured)
    planned = _train_job(plan)
    assert planned.runtime == 60 and planned.segments == math.ceil(5 * 3600 * 1.0 / (55 * 60))
    assert "more than max_requeues (2) allows" in planned.note
    requeued = {p.job.name for p in plan.jobs if p.segments > 1}  # not the two-variable one: another task's benchmark
    assert requeued == {"train transformer 1"} and plan.totals()["requeued"] == 1


def test_cpu_families_get_at_least_the_minimum_runtime(tmp_path):
    params = load_default_params()
    params["cluster"]["tables"]["runtime"] = None
    write_stage_rates(tmp_path, "cpu", {"tables": {"fixed_s": 8.0}})
    plan = make_plan(params, measurements=load_measurements(tmp_path))
    assert next(p for p in plan.jobs if p.job.rule == "tables").runtime == MIN_RUNTIME


def test_wall_time_lies_between_the_critical_path_and_all_the_work(tmp_path):
    params = load_default_params()
    write_stage_rates(tmp_path, "cpu", {stage: {"fixed_s": 5.0} for stage in {job.stage for job in jobs(params)}})
    plan = make_plan(params, measurements=load_measurements(tmp_path))
    fixed = [p for p in plan.jobs if p.work.kind == "fixed"]
    assert all(p.estimate.seconds == 5.0 for p in fixed)
    work = sum(p.estimate.seconds or 0 for p in plan.jobs)
    assert plan.critical_path_s <= plan.wall_s <= work
    assert plan.cores == 2 and plan.wall_s >= work / 2


def test_an_unpriced_job_requests_its_partitions_limit_where_one_is_set(tmp_path):
    params = load_default_params()
    params["cluster"]["train"].update(runtime=None, device="h100")
    plan = make_plan(params, measurements=load_measurements(tmp_path))  # nothing measured
    assert _train_job(plan).runtime is None  # no limit: nothing to request (a SLURM submission stops)
    params["cluster"]["train"]["time_limit"] = 240
    planned = _train_job(make_plan(params, measurements=load_measurements(tmp_path)))
    assert planned.runtime == 240 and planned.runtime_source == "cluster.train.time_limit (unpriced)"
