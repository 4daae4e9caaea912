"""What the runs took, as MLflow recorded them, beside the plan's estimate, per rule: `tprepro plan --actual`.
A training run's time is its trainer's `train.wall_seconds` (the run itself stays open while its model
is evaluated and interpreted, which log into it); another run's, its start to its end (what the job
did while the run was open, not its start-up)."""

from __future__ import annotations

from collections import defaultdict

from tprepro.plan.plan import Plan
from tprepro.plan.report import duration


def recorded(params: dict, uri: str | None = None) -> dict[tuple[str, str], list[float]]:
    """(experiment, stage tag) -> the seconds of each finished run in that experiment's MLflow experiment."""
    from mlflow.tracking import MlflowClient

    from tprepro.experiments import mlflow_experiment, tracked_experiments
    from tprepro.tracking.store import tracking_uri

    client = MlflowClient(tracking_uri=uri or tracking_uri())
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name in tracked_experiments():
        tracked = client.get_experiment_by_name(mlflow_experiment(params, name).name)
        if tracked is None:
            continue
        for run in client.search_runs([tracked.experiment_id], "attributes.status = 'FINISHED'", max_results=50000):
            stage = run.data.tags.get("stage")
            trained = run.data.metrics.get("train.wall_seconds")
            if stage and (trained is not None or run.info.end_time):
                found[name, stage].append(trained if trained is not None
                                          else (run.info.end_time - run.info.start_time) / 1000)
    return dict(found)


def _rule(plan: Plan, experiment: str, stage: str) -> str | None:
    """The rule of `experiment` whose runs carry tag `stage` (train: that experiment's training rule)."""
    from tprepro.experiments import experiments

    rules = [s.rule for s in experiments()[experiment].stages]
    return next((rule for rule in rules if rule == stage or rule.endswith(f"_{stage}")), None)


def compare(plan: Plan, runs: dict[tuple[str, str], list[float]]) -> str:
    """A line per rule with recorded runs: jobs planned and recorded, estimated and recorded seconds."""
    header = f"{'rule':<28} {'planned':>7} {'runs':>5} {'estimate':>11} {'actual':>11} {'actual/estimate':>16}"
    lines = [f"estimate vs actual ({plan.params_path}; actual: MLflow's train.wall_seconds of a training run, "
             "else its start to end; estimate: the plan's job seconds)", header, "-" * len(header)]
    if not runs:
        return "\n".join([*lines, "no finished runs recorded in MLflow for these params' experiments"])
    for (experiment, stage), seconds in sorted(runs.items()):
        rule = _rule(plan, experiment, stage)
        jobs = [p for p in plan.jobs if p.job.rule == rule]
        known = [p.estimate.seconds for p in jobs if p.estimate.seconds is not None]
        estimate = sum(known) / len(known) * len(seconds) if known else None  # for as many jobs as ran
        actual = sum(seconds)
        ratio = f"{actual / estimate:.2f}" if estimate else "-"
        lines.append(f"{rule or experiment + ' ' + stage:<28} {len(jobs):>7} {len(seconds):>5} "
                     f"{duration(estimate):>11} {duration(actual):>11} {ratio:>16}")
    return "\n".join(lines)
