"""A params file's plan: its jobs are the DAG's, SLURM runtimes derive from the estimate, a job above
its limit is planned as requeued allocations."""

import math

import pytest

from helpers import REPO, load_default_params
from plan_kit import write_stage_rates, write_throughput
from tprepro.errors import TpreproError
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


def _data_job(plan, split="train-easy", module="arithmetic__add_or_sub"):
    return next(p for p in plan.jobs if p.job.stage == "data" and (p.work.split, p.work.module) == (split, module))


def _priced_data(tmp_path, **cluster):
    from plan_kit import write_data_rates

    params = load_default_params()
    params["cluster"]["data"].update(runtime=None, **cluster)
    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (3.0, 0.5)})  # 60 problems: 33 s
    return params, load_measurements(tmp_path)


def test_a_cpu_jobs_runtime_covers_a_node_twice_as_slow_and_a_retry_asks_for_attempt_times_it(tmp_path, monkeypatch):
    """Issue 55: on a node 2x slower than the measured one every CPU job finishes within its runtime; one
    killed at its limit anyway is retried (the SLURM profile's retries) with `attempt` times the runtime, up
    to the partition's time_limit (what workflow.stage_resources asks runtime_of for)."""
    from tprepro.plan import plan as plan_module
    from tprepro.plan.plan import SLOWER_NODE, runtime_of

    params, measured = _priced_data(tmp_path)
    params["data"]["train_per_module"] = 6_000  # 3,003 s: 150 min with the margin and the slower node
    planned = _data_job(make_plan(params, measurements=measured))
    assert planned.runtime == math.ceil(3003 * MARGIN * SLOWER_NODE / 60) == 151
    assert planned.runtime * 60 >= SLOWER_NODE * planned.wall_s
    assert "x 2.0 (a slower node)" in planned.runtime_source
    wildcards = {"split": "train-easy", "module": "arithmetic__add_or_sub"}
    monkeypatch.setitem(plan_module._PLANS, plan_module.plan_key(params), make_plan(params, measurements=measured))
    assert [runtime_of(params, "data", wildcards, attempt) for attempt in (1, 2, 3)] == [151, 302, 453]
    params["cluster"]["data"]["time_limit"] = 400
    monkeypatch.setitem(plan_module._PLANS, plan_module.plan_key(params), make_plan(params, measurements=measured))
    assert [runtime_of(params, "data", wildcards, attempt) for attempt in (1, 2, 3)] == [151, 302, 400]


def test_a_runtime_too_short_for_a_slower_node_is_noted(tmp_path):
    params, measured = _priced_data(tmp_path)
    params["cluster"]["data"]["runtime"] = 1  # 33 s: within a minute here, not on a node 2x slower
    params["data"].update(train_per_module=60, rows_per_shard=20)
    planned = _data_job(make_plan(params, measurements=measured))
    assert planned.runtime == 1 and planned.note == ("a node 2x slower would pass its 1 min: killed, then retried "
                                                     "with a longer limit (the SLURM profile's retries), keeping its "
                                                     "finished shards")
    params["data"]["train_per_module"] = 200  # 103 s
    assert _data_job(make_plan(params, measurements=measured)).note.startswith("estimate above its 1 min: killed")


def test_a_families_cpu_factor_scales_its_jobs_and_a_calibration_the_others(tmp_path):
    from tprepro.plan.calibrate import Calibration
    from tprepro.plan.machine import this_machine

    params, measured = _priced_data(tmp_path, cpu_factor=1.5)
    params["data"]["train_per_module"] = 60
    write_stage_rates(tmp_path, "cpu", {"tables": {"fixed_s": 8.0}})
    measured = load_measurements(tmp_path)
    plan = make_plan(params, measurements=measured)
    data, tables = _data_job(plan), next(p for p in plan.jobs if p.job.rule == "tables")
    assert data.estimate.seconds == pytest.approx(1.5 * 33.0) and data.cpu_factor == 1.5
    assert data.estimate.source.endswith("x 1.50 (cluster.data.cpu_factor)")
    assert tables.estimate.seconds == 8.0 and tables.cpu_factor == 1.0
    from tprepro.plan.report import table

    assert "\nCPU jobs priced x 1.50 (cluster.data.cpu_factor)\n" in table(plan)
    calibrated = make_plan(params, measurements=measured, calibration=Calibration(2.0, this_machine(), (), "a test"))
    assert _data_job(calibrated).estimate.seconds == pytest.approx(1.5 * 33.0)  # the partition's own factor wins
    tables = next(p for p in calibrated.jobs if p.job.rule == "tables")
    assert tables.estimate.seconds == 16.0 and "calibrated on this machine" in tables.estimate.source


def test_a_calibration_prices_a_data_job_by_its_module_familys_reference_jobs(tmp_path):
    """A data job of a family the reference holds at its family's factor, another CPU job at the median; the
    table says both within its width."""
    from tprepro.plan.calibrate import Calibration, ReferenceJob
    from tprepro.plan.machine import this_machine
    from tprepro.plan.report import WIDTH, table

    params, _ = _priced_data(tmp_path)
    params["data"]["train_per_module"] = 60
    write_stage_rates(tmp_path, "cpu", {"tables": {"fixed_s": 8.0}})
    jobs = (ReferenceJob("data train-easy/arithmetic__add_or_sub@20000", 3.0, 1.0, "arithmetic__*"),
            ReferenceJob("data train-hard/calculus__differentiate@200", 1.0, 1.0, "calculus__*"))
    plan = make_plan(params, measurements=load_measurements(tmp_path),
                     calibration=Calibration(2.0, this_machine(), jobs, load=(0.5, 0.7)))
    data, tables = _data_job(plan), next(p for p in plan.jobs if p.job.rule == "tables")
    assert data.estimate.seconds == pytest.approx(3.0 * 33.0) and data.cpu_factor == 3.0
    assert data.cpu_factor_from == "calibrated on this machine, arithmetic__* reference jobs"
    assert tables.estimate.seconds == 16.0 and tables.cpu_factor_from == "calibrated on this machine"
    printed = table(plan)
    assert max(len(line) for line in printed.splitlines()) <= WIDTH
    assert "arithmetic__* x3.00, calculus__* x1.00" in " ".join(printed.split())


def test_a_model_priced_cheaper_per_step_than_a_smaller_one_says_why(tmp_path):
    """Issue 55: the TP-Transformer was priced below the Transformer with no remark."""
    params = load_default_params()
    params["cluster"]["train"].update(runtime=None, device="h100")
    write_throughput(tmp_path, "h100", "transformer_tiny", 1000.0, mfu_padded=0.10, padding_share=0.2)
    write_throughput(tmp_path, "h100", "tp_transformer_tiny", 1250.0, mfu_padded=0.14, padding_share=0.2)
    plan = make_plan(params, measurements=load_measurements(tmp_path))
    tp, plain = _train_job(plan, "tp_transformer"), _train_job(plan, "transformer")
    assert tp.note.startswith("0.80x transformer_tiny's time a step at ") and "benchmarked at 14.0% vs 10.0%" in tp.note
    assert not plain.note


def test_the_plan_cache_is_keyed_by_the_settings_and_wildcards_match_by_name(tmp_path, monkeypatch):
    """An equal copy of the settings finds the plan made for them, edited settings do not; a job's wildcards are
    matched by name, so the same values under other names name no job."""
    import copy

    from tprepro.plan import plan as plan_module
    from tprepro.plan.plan import planned_job

    params, measured = _priced_data(tmp_path)
    made = make_plan(params, measurements=measured)
    monkeypatch.setattr(plan_module, "_PLANS", {plan_module.plan_key(params): made})
    same = copy.deepcopy(params)
    wildcards = {"split": "train-easy", "module": "arithmetic__add_or_sub"}
    assert planned_job(same, "data", wildcards) is _data_job(made)
    same["data"]["train_per_module"] += 1
    assert plan_module.plan_key(same) != plan_module.plan_key(params)
    with pytest.raises(TpreproError, match="no job with wildcards"):
        planned_job(params, "data", {"split": "arithmetic__add_or_sub", "module": "train-easy"})
