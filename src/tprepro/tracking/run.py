"""One MLflow run, journaled so that a fallback to the local store replays it; datasets and logged models."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tprepro.tracking.links import run_page
from tprepro.tracking.parents import parent_run_id
from tprepro.tracking.provenance import source_tags
from tprepro.tracking.store import (Experiment, client_and_experiment, describe_store, first_line, local_uri,
                                    portable_uri, resolve_uri, server_unreachable, tracking_uri, warn)


def flatten(prefix: str, value) -> dict[str, str]:
    """Nested settings as MLflow params: {"model.d_model": "64", ...}."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, inner in value.items():
            out.update(flatten(f"{prefix}.{key}" if prefix else str(key), inner))
        return out
    return {prefix: str(value)}


@dataclass(frozen=True)
class DatasetRecord:
    """A dataset as a run's input: where it is and the digest of its shards' bytes."""

    source: str  # the dataset directory, as the stage was given it
    digest: str  # data.shards.Dataset.fingerprint()
    rows: int
    shards: int


class Run:
    """One MLflow run, created new or reopened by id (a resumed job continues its run).

    New runs become children of the invocation's parent run (`parent_run_id`).
    If a tracking server stops answering, the run continues in the local store:
    one warning, then a local run with the same name receives everything this
    process logged so far (replayed) and everything after, so nothing is lost.
    `uri` and `run_id` then name the local run.
    """

    def __init__(self, experiment: str | Experiment, name: str, run_id: str | None = None,
                 tags: dict | None = None, tracking_uri: str | None = None):
        self.experiment = experiment
        self.name = name
        self.uri = resolve_uri(tracking_uri)
        self.run_id: str | None = None
        self.disabled = False  # the store failed: the rest of this run is not tracked
        self.journal: list[tuple[str | Callable, tuple]] = []  # every logging call, for replay after a fallback
        self.tags = {**source_tags(), **{k: str(v) for k, v in (tags or {}).items()}}
        try:
            self._open(run_id)
        except Exception as exc:
            self._recover(exc)

    @property
    def recorded_uri(self) -> str:
        """The store as checkpoints and train_metrics.json record it (project-relative when local)."""
        return portable_uri(self.uri)

    def _open(self, run_id: str | None) -> None:
        from mlflow.entities import RunTag

        self.client, experiment_id = client_and_experiment(self.experiment, self.uri)
        self.experiment_id = experiment_id
        if run_id is None:
            parent = parent_run_id(self.client, experiment_id)
            tags = {**self.tags, **({"mlflow.parentRunId": parent} if parent else {})}
            self.run_id = self.client.create_run(experiment_id, run_name=self.name, tags=tags).info.run_id
        else:
            self.run_id = run_id
            self.client.update_run(run_id, status="RUNNING")
            self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in self.tags.items()])

    def _unreachable(self, exc: Exception) -> bool:
        return server_unreachable(self.uri, exc)

    def _recover(self, exc: Exception) -> None:
        """After a failed request: fall back to the local store once if the server is down, else stop tracking."""
        if self._unreachable(exc):
            try:
                self._fall_back(exc)
                return
            except Exception as local_exc:
                exc = local_exc
        self.disabled = True
        warn(f"MLflow store {describe_store(self.uri)} failed ({first_line(exc)}); run '{self.name}' "
             f"is not tracked from here on, the stage's outputs are unaffected")

    def _fall_back(self, exc: Exception) -> None:
        lost = self.run_id
        warn(f"MLflow tracking server {self.uri} unreachable ({first_line(exc)}); "
             f"run '{self.name}' continues in the local store {describe_store(local_uri())}")
        self.tags["tprepro.fallback_from"] = f"{os.environ.get('MLFLOW_TRACKING_URI', '')} run {lost}"
        if os.environ.get("MLFLOW_TRACKING_URI") == self.uri:  # the rest of this process: no second wait
            os.environ["MLFLOW_TRACKING_URI"] = local_uri()
        self.uri = local_uri()
        self._open(None)
        for method, args in self.journal:
            self._apply(method, args)

    def _apply(self, method: str | Callable, args: tuple) -> None:
        """client.<method>(run_id, *args), or method(client, run_id, *args) for a function."""
        if callable(method):
            method(self.client, self.run_id, *args)
        else:
            getattr(self.client, method)(self.run_id, *args)

    def _call(self, method: str | Callable, *args) -> None:
        """`_apply`, journaled; falls back to the local store once if needed."""
        if self.disabled:
            return
        self.journal.append((method, args))
        try:
            self._apply(method, args)
        except Exception as exc:
            self._recover(exc)  # a fallback replays the journal, this call included

    @property
    def url(self) -> str:
        """Where a user finds this run: its page on a server, else the page `mlflow ui` serves."""
        page = run_page(self.experiment_id, self.run_id)
        if self.uri.startswith("sqlite:"):
            return f"page {page} of `mlflow ui --backend-store-uri {portable_uri(self.uri)}`"
        return f"{self.uri.rstrip('/')}/{page}"

    def logged_steps(self, key: str) -> set[int]:
        """Steps at which `key` is already logged in this run (empty if the store cannot say)."""
        if self.disabled or self.run_id is None:
            return set()
        try:
            return {m.step for m in self.client.get_metric_history(self.run_id, key)}
        except Exception as exc:
            self._recover(exc)
            return set()

    def log_params(self, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in flatten("", params).items()]
        for start in range(0, len(items), 100):  # MLflow's per-request limit
            self._call("log_batch", [], items[start : start + 100])

    def log_metrics(self, metrics: dict[str, float], step: int = 0) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in metrics.items()]
        for start in range(0, len(items), 1000):
            self._call("log_batch", items[start : start + 1000])

    def log_datasets(self, datasets: dict[str, "DatasetRecord"], context: str = "training") -> None:
        """The datasets a run read, as MLflow dataset inputs (the run page's Datasets panel)."""
        from mlflow.entities import Dataset, DatasetInput, InputTag

        inputs = [DatasetInput(Dataset(name=label, digest=record.digest[:36], source_type="local",  # MLflow's limit
                                       source=json.dumps({"uri": record.source}),
                                       profile=json.dumps({"num_rows": record.rows, "shards": record.shards,
                                                           "sha256": record.digest})),
                               tags=[InputTag("mlflow.data.context", context)])
                  for label, record in datasets.items()]
        self._call(_log_inputs, inputs)

    def set_tag(self, key: str, value) -> None:
        self._call("set_tag", key, str(value))

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        self._call("log_artifact", str(Path(path).resolve()), artifact_path)

    def log_artifacts(self, directory: str | Path, artifact_path: str | None = None) -> None:
        """Every file under `directory`, as the artifact folder `artifact_path`."""
        self._call("log_artifacts", str(Path(directory).resolve()), artifact_path)

    def log_model(self, directory: str | Path, name: str, model_type: str) -> None:
        """The MLflow model saved in `directory` as this run's logged model `name` (MLflow's Logged
        models: the run's page lists it and `runs:/<run id>/<name>` loads it); it replaces a model
        of that name the run logged before (a re-export)."""
        self._call(_log_model, str(Path(directory).resolve()), name, model_type)

    def finish(self, status: str = "FINISHED") -> None:
        self._call("set_terminated", status)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        """A stage that fails inside `with run:` ends the run FAILED (on success, call `finish()`)."""
        if exc is not None:
            self.finish("FAILED")


DATASET_RACE = "UNIQUE constraint failed: datasets."  # a concurrent job inserted the dataset row first (sqlite)


def _log_inputs(client, run_id: str, inputs: list, attempts: int = 3) -> None:
    """client.log_inputs, retried when another job inserted one of the same datasets first: MLflow's store looks
    the experiment's datasets up and then inserts those it did not find, so two trainings of one pipeline that read
    the same shards at the same moment collide on the datasets' unique key; a retry finds the other's rows."""
    for attempt in range(1, attempts + 1):
        try:
            client.log_inputs(run_id, inputs)
            return
        except Exception as exc:
            if attempt == attempts or DATASET_RACE not in str(exc):
                raise


def _log_model(client, run_id: str, directory: str, name: str, model_type: str) -> None:
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus

    experiment_id = client.get_run(run_id).info.experiment_id
    earlier = [model for model in client.search_logged_models([experiment_id], filter_string=f"name = '{name}'")
               if model.source_run_id == run_id]
    model = client.create_logged_model(experiment_id, name=name, source_run_id=run_id, model_type=model_type)
    client.log_model_artifacts(model.model_id, directory)
    client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    client.log_outputs(run_id, [LoggedModelOutput(model.model_id, step=0)])  # the run page lists it
    for old in earlier:
        client.delete_logged_model(old.model_id)
