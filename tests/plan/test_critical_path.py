"""The DAG's critical path and its list schedule on limited workers."""

from tprepro.plan.critical_path import critical_path, schedule

ORDER = ["a", "b", "c", "d"]
BEFORE = {"a": [], "b": [], "c": ["a"], "d": ["a", "b"]}
SECONDS = {"a": 10.0, "b": 4.0, "c": 7.0, "d": 1.0}


def test_the_critical_path_is_the_longest_chain():
    assert critical_path(ORDER, BEFORE, SECONDS) == (17.0, ["a", "c"])


def test_one_worker_runs_everything_one_after_another_and_enough_workers_the_critical_path():
    one = {"cpu": 1}
    assert schedule(ORDER, BEFORE, SECONDS, lambda job: "cpu", one) == sum(SECONDS.values())
    assert schedule(ORDER, BEFORE, SECONDS, lambda job: "cpu", {"cpu": 4}) == 17.0


def test_two_pools_share_nothing():
    pools = {"a": "gpu", "c": "gpu", "b": "cpu", "d": "cpu"}
    assert schedule(ORDER, BEFORE, SECONDS, pools.get, {"gpu": 1, "cpu": 1}) == 17.0
