"""Mathematics data jobs in the plan: priced from their own (split, module)'s fit, given the CPUs that
finish their shards in about an hour, and the data-rates file checked by its owner."""

import json
import math

import pytest

from helpers import load_default_params
from plan_kit import write_data_rates, write_stage_rates
from tprepro.errors import TpreproError
from tprepro.plan.plan import DATA_JOB_TARGET_S, make_plan
from tprepro.plan.speeds import load_measurements


def _data_jobs(plan):
    return {f"{p.job.values.get('split', 'extrapolate')}/{p.job.values.get('module', p.job.values.get('item'))}": p
            for p in plan.jobs if p.job.rule == "data"}


def test_each_data_job_is_priced_from_its_own_split_and_module(tmp_path):
    params = load_default_params()
    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001),
                                       "train-hard/arithmetic__add_or_sub": (2.0, 0.004)})
    planned = _data_jobs(make_plan(params, measurements=load_measurements(tmp_path)))
    count = params["data"]["train_per_module"]
    easy, hard = planned["train-easy/arithmetic__add_or_sub"], planned["train-hard/arithmetic__add_or_sub"]
    assert easy.estimate.seconds == pytest.approx(2.0 + 0.001 * count)
    assert hard.estimate.seconds == pytest.approx(2.0 + 0.004 * count)
    assert easy.estimate.status == "measured" and "data jobs at 200 and 1,000 problems on cpu" in easy.estimate.source
    # no fit for it, nor stage rates: unmeasured, never another module's number
    assert planned["train-medium/arithmetic__add_or_sub"].estimate.status == "unmeasured"


def test_a_module_without_a_fit_falls_back_to_the_labelled_median(tmp_path):
    params = load_default_params()
    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})
    write_stage_rates(tmp_path, "cpu", {"data": {"fixed_s": 1.0, "per_module": {"numbers__place_value": 0.5}}})
    planned = _data_jobs(make_plan(params, measurements=load_measurements(tmp_path)))
    assert planned["train-hard/arithmetic__add_or_sub"].estimate.status == "extrapolated"


def test_a_slow_data_job_gets_the_cpus_that_finish_its_shards_in_about_an_hour(tmp_path):
    params = load_default_params()
    params["data"].update(train_per_module=666_666, rows_per_shard=5_000)  # 134 shards
    params["cluster"]["data"].update(cpus=None, runtime=None)
    write_data_rates(tmp_path, "cpu", {"train-hard/arithmetic__add_or_sub": (3.0, 0.045),  # 8.3 CPU-hours
                                       "train-easy/arithmetic__add_or_sub": (3.0, 0.0002)})
    planned = _data_jobs(make_plan(params, measurements=load_measurements(tmp_path)))
    slow, fast = planned["train-hard/arithmetic__add_or_sub"], planned["train-easy/arithmetic__add_or_sub"]
    shard_s = slow.estimate.seconds / 134
    assert slow.cpus == math.ceil(134 / math.floor(DATA_JOB_TARGET_S / shard_s)) > 1
    assert slow.wall_s <= DATA_JOB_TARGET_S < slow.estimate.seconds
    assert slow.runtime == math.ceil(slow.wall_s * 1.5 * 2 / 60)  # the SLURM request follows the wall time, on a node 2x slower
    assert fast.cpus == 1 and fast.wall_s == fast.estimate.seconds
    assert make_plan(params, measurements=load_measurements(tmp_path)).totals()["longest_data_job_s"] == slow.wall_s


def test_cpus_the_params_set_win(tmp_path):
    params = load_default_params()
    params["cluster"]["data"]["cpus"] = 3
    write_data_rates(tmp_path, "cpu", {"train-hard/arithmetic__add_or_sub": (3.0, 0.045)})
    assert _data_jobs(make_plan(params, measurements=load_measurements(tmp_path)))[
        "train-hard/arithmetic__add_or_sub"].cpus == 3


def test_totals_leaving_a_job_out_are_unknown(tmp_path):
    params = load_default_params()
    totals = make_plan(params, measurements=load_measurements(tmp_path)).totals()  # nothing measured
    assert totals["cpu_hours"] is None and totals["cpu_unmeasured"] == totals["jobs"]
    assert totals["wall_s"] is None and totals["critical_path_s"] is None
    assert totals["priced_wall_s"] == 0


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["jobs"]["train-easy/arithmetic__add_or_sub"].update(seconds_per_problem=float("nan")), "jobs.train-easy"),
    (lambda d: d["jobs"]["train-easy/arithmetic__add_or_sub"].update(fixed_s=-1), "jobs.train-easy"),
    (lambda d: d["jobs"].update({"no-split": {"fixed_s": 1, "seconds_per_problem": 1}}), "jobs.no-split"),
    (lambda d: d.update(device_kind="h100"), "the file must be data/<device_kind>.json"),
    (lambda d: d.update(schema="tprepro.data_rates/0"), "schema"),
])
def test_a_bad_data_rates_file_is_refused_naming_the_key(tmp_path, edit, message):
    path = write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(TpreproError, match=message):
        load_measurements(tmp_path)


def test_a_bad_entry_never_replaces_a_good_file(tmp_path):
    from tprepro.plan.speeds import stage_rates_path, update_stage_rate

    path = write_stage_rates(tmp_path, "cpu", {"vocab": {"fixed_s": 2.0, "seconds_per_item": 3e-6}})
    update_stage_rate("cpu", "vocab", {"fixed_s": 2.1, "seconds_per_item": 3.1e-6}, root=tmp_path)
    assert load_measurements(tmp_path).stage_rates["cpu"].rate("vocab", None).seconds_per_item == 3.1e-6
    before = path.read_bytes()
    with pytest.raises(TpreproError, match="stages.vocab"):
        update_stage_rate("cpu", "vocab", {"fixed_s": -1.0}, root=tmp_path)
    assert path.read_bytes() == before and path == stage_rates_path("cpu", tmp_path)
    assert [p.name for p in path.parent.iterdir()] == ["cpu.json"]  # no temporary file left
