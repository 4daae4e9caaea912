"""The MLflow store: its URI (local sqlite or a server), experiments created under a lock with a project-relative artifact location, and warnings that never fail a stage."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlartifacts"
INVOCATION_TAG = "tprepro.invocation"
# The experiment type MLflow 3 records (its UI's landing view is chosen in the browser: see above).
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
# A down server costs seconds, not MLflow's default minutes of retries.
SERVER_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                   "MLFLOW_HTTP_REQUEST_TIMEOUT": "15"}


PORTABLE_LOCAL_URI = f"sqlite:///{DEFAULT_DB}"  # what checkpoints record for the local store


@dataclass(frozen=True)
class Experiment:
    """An MLflow experiment as the pipeline creates it."""

    name: str  # e.g. "tprepro-mathematics"
    description: str = ""  # markdown, shown above the experiment's runs
    log_models: bool = True  # training runs log an MLflow model, the run's logged model `model` (evaluate/pyfunc.py)


def as_experiment(experiment: "str | Experiment") -> Experiment:
    return experiment if isinstance(experiment, Experiment) else Experiment(experiment)


def local_uri() -> str:
    return f"sqlite:///{Path(DEFAULT_DB).resolve()}"


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or local_uri()


def portable_uri(uri: str) -> str:
    """The URI to record: this project's local store as the relative `sqlite:///mlflow.db`."""
    return PORTABLE_LOCAL_URI if uri == local_uri() else uri


def resolve_uri(uri: str | None) -> str:
    """A recorded URI to use: the relative local store means this directory's store."""
    if not uri:
        return tracking_uri()
    return local_uri() if uri == PORTABLE_LOCAL_URI else uri


def server_unreachable(uri: str, exc: BaseException) -> bool:
    """A tracking server that does not answer (not a rejected request, not the local store)."""
    return not uri.startswith("sqlite:") and str(exc).startswith("API request to")


def describe_store(uri: str) -> str:
    """The store as a user finds it: the database file for sqlite, else the URI."""
    return uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else uri


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def warn(message: str) -> None:
    print(f"WARNING: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def store_lock() -> Iterator[None]:
    lock = Path(f"{DEFAULT_DB}.lock").resolve()
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@functools.cache
def check_store(path: str) -> bool:
    """`PRAGMA quick_check` of a local store, once per process: False, with a warning naming the file and
    what sqlite found, when it is damaged (MLflow itself reads on until a damaged page is hit)."""
    import sqlite3

    if not Path(path).is_file():
        return True
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)) as db:
            found = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        found = [str(exc)]
    if found == ["ok"]:
        return True
    warn(f"MLflow store {path} is damaged (sqlite quick_check: {'; '.join(found)[:300]}); runs may be lost. "
         f"Keep a copy, then try `sqlite3 {path} .recover`, or move it aside to start a new store")
    return False


def client_and_experiment(experiment: str | Experiment, uri: str | None = None):
    """An MlflowClient for `uri` (default `tracking_uri()`) and the id of `experiment` (created if new)."""
    from mlflow.tracking import MlflowClient

    for key, value in SERVER_DEFAULTS.items():
        os.environ.setdefault(key, value)
    experiment = as_experiment(experiment)
    uri = uri or tracking_uri()
    local = uri.startswith("sqlite:")
    if local:
        check_store(str(Path(describe_store(uri)).resolve()))
    with store_lock() if local else contextlib.nullcontext():
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment.name)
        if found is not None:
            return client, found.experiment_id
        tags = dict(EXPERIMENT_KIND)
        if experiment.description:
            tags["mlflow.note.content"] = experiment.description
        experiment_id = client.create_experiment(experiment.name, tags=tags)
        if local:
            _relative_artifact_location(uri, experiment_id)
        return client, experiment_id


def _relative_artifact_location(uri: str, experiment_id: str) -> None:
    """Store the local experiment's artifact location as `mlartifacts/<id>`, relative to the project.

    MLflow makes every local artifact location absolute when it creates an experiment and has no
    call to change it, so the row is updated in the store's own table (under the store lock).
    """
    import sqlite3

    location = f"{DEFAULT_ARTIFACTS}/{experiment_id}"
    with contextlib.closing(sqlite3.connect(describe_store(uri), timeout=60)) as db, db:
        db.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                   (location, int(experiment_id)))
