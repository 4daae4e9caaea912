"""One parent run per pipeline invocation and experiment, found by the invocation's key."""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone

from tprepro.invocation import INVOCATION_ENV, group_key, owner_alive
from tprepro.tracking.provenance import source_tags
from tprepro.tracking.store import (Experiment, INVOCATION_TAG, store_lock, as_experiment, client_and_experiment,
                                    describe_store, first_line, local_uri, server_unreachable, tracking_uri, warn)

CLOSED_TAG = "tprepro.closed"  # on a parent run a later invocation closed: when and why


def invocation_key() -> str:
    """This pipeline invocation: the key Snakemake's onstart exported, else the process group's
    (host, group leader and its start time: all stages of one `dvc repro` share it)."""
    return os.environ.get(INVOCATION_ENV) or group_key()


def _find_parent(client, experiment_id: str):
    found = client.search_runs([experiment_id], filter_string=f"tags.`{INVOCATION_TAG}` = '{invocation_key()}'",
                               max_results=1)
    return found[0] if found else None


def parent_run_id(client, experiment_id: str) -> str:
    """The parent run of this invocation in the experiment, created by the first job that asks
    (under the store lock when local: parallel jobs find one parent)."""
    local = client.tracking_uri.startswith("sqlite:")
    with store_lock() if local else contextlib.nullcontext():
        found = _find_parent(client, experiment_id)
        if found is not None:
            return found.info.run_id
        close_abandoned_parents(client, experiment_id)
        return client.create_run(experiment_id, run_name="pipeline",
                                 tags={INVOCATION_TAG: invocation_key(), **source_tags()}).info.run_id


def _all_children_finished(client, experiment_id: str, run_id: str) -> int:
    """How many child runs parent `run_id` has if every one of them ended FINISHED, else 0."""
    children = client.search_runs([experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
                                  max_results=10000)
    return len(children) if children and all(child.info.status == "FINISHED" for child in children) else 0


def close_abandoned_parents(client, experiment_id: str) -> list[str]:
    """Close the parent runs left RUNNING by invocations whose process is gone, tagged with when and why
    (CLOSED_TAG); the ids closed. Snakemake's (a key with its nonce) are KILLED: its onsuccess/onerror
    would have closed them. A stage run by hand (`tprepro train` in a shell, `dvc repro`: the process
    group's key), which nothing closes when it ends, is FINISHED if each of its runs finished, else KILLED.
    A parent whose invocation still runs, or whose owner this host cannot check (another host), stays open."""
    closed = []
    for run in client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'", max_results=1000):
        key = run.data.tags.get(INVOCATION_TAG)
        if key is None or key == invocation_key() or owner_alive(key) is not False:
            continue
        host, pid = key.split(":")[:2]
        now = datetime.now(timezone.utc)
        by_hand = len(key.split(":")) == 3  # invocation.group_key(): no Snakemake owned it
        finished = _all_children_finished(client, experiment_id, run.info.run_id) if by_hand else 0
        why = (f"had ended after its {finished} run(s) all finished (stages run by hand, which no workflow "
               f"closes)" if finished else "had ended without closing it (killed, or a stage run alone that "
                                               "did not finish)")
        client.set_tag(run.info.run_id, CLOSED_TAG,
                       f"{now.isoformat(timespec='seconds')}: closed by invocation {invocation_key()}: the process "
                       f"of its own invocation (pid {pid} on {host}) {why}")
        client.set_terminated(run.info.run_id, "FINISHED" if finished else "KILLED",
                              end_time=int(now.timestamp() * 1000))
        closed.append(run.info.run_id)
    return closed


def start_parent_runs(experiments: list[Experiment]) -> None:
    """Snakemake's onstart: this invocation's parent run in each experiment.

    A server that does not answer: one warning and the local store for the whole invocation
    (through MLFLOW_TRACKING_URI, which every job inherits). A store that fails otherwise: one
    warning naming it; the jobs then report their own tracking trouble.
    """
    uri = tracking_uri()
    try:
        for experiment in experiments:
            client, experiment_id = client_and_experiment(experiment, uri)
            parent_run_id(client, experiment_id)
    except Exception as exc:
        if not server_unreachable(uri, exc):
            warn(f"MLflow store {describe_store(uri)} failed ({first_line(exc)}); the pipeline runs "
                 f"without parent runs")
            return
        warn(f"MLflow tracking server {uri} unreachable ({first_line(exc)}); this invocation tracks "
             f"into the local store {describe_store(local_uri())}")
        os.environ["MLFLOW_TRACKING_URI"] = local_uri()
        start_parent_runs(experiments)


def finish_parent_run(experiment: str | Experiment, status: str = "FINISHED", owner: bool = False) -> None:
    """Close this invocation's parent run in `experiment` with `status` (and delete it if no run became its child).

    Called by Snakemake's onsuccess/onerror (`owner`) and by each experiment's tables stage; under
    Snakemake (its key exported) a stage leaves the parent open, as later jobs may still add to it.
    A store that fails (server down, corrupt database) costs one warning, never the stage.
    """
    if not owner and os.environ.get(INVOCATION_ENV):
        return
    uri = tracking_uri()
    run_id = None
    try:
        client, experiment_id = client_and_experiment(experiment, uri)
        found = _find_parent(client, experiment_id)
        if found is None:
            return
        run_id = found.info.run_id
        children = client.search_runs([experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
                                      max_results=1)
        client.set_terminated(run_id, status)  # also an idle one: deleting a run leaves its status as it was
        if not children:
            client.delete_run(run_id)
    except Exception as exc:
        warn(f"MLflow store {describe_store(uri)}: could not end the pipeline's parent run "
             f"{run_id or ''} in '{as_experiment(experiment).name}' ({first_line(exc)}); its outputs are unaffected")
