"""MLflow tracking: an embedded sqlite store by default, any server via MLFLOW_TRACKING_URI.

The default store is `mlflow.db` (sqlite) with artifacts in `mlartifacts/`, both
in the directory the pipeline runs from and both git-ignored; `mlflow ui
--backend-store-uri sqlite:///mlflow.db` shows them. Parallel jobs share the
store, so creating it and the experiment happens under a file lock.

Each experiment (Mathematics, two-variable, N2F, summarization) has its own MLflow
experiment, `<mlflow.prefix>-<name>`, created with its description, the experiment-type tag
of model training and a project-relative artifact location (`mlartifacts/<id>`, so a moved
project keeps its artifacts; `mlflow ui` is started from the project folder). MLflow 3.17's
UI opens on its GenAI view whatever the tag says, so the run links printed in the logs carry
`?workflowType=machine_learning`, which opens the training view.

Runs of one pipeline invocation are children of one parent run per experiment, found by
the invocation's key (tag `tprepro.invocation`): Snakemake's `onstart:` exports a fresh
key (TPREPRO_INVOCATION, workflow/rules/mlflow.smk), creates the parents and closes them
at the end, deleting those that got no child. Without Snakemake (DVC, a stage by hand)
the key is the process group, a job creates its experiment's parent when it is the first,
and the experiment's tables stage closes it.

With a server, requests give up after a few quick retries (the MLFLOW_HTTP_*
defaults below; the environment overrides them) and a run then falls back to
the local store (see `Run`). Tracking never fails a stage: a server that does
not answer (at Snakemake's start, during or at the end of a stage) means the
local store and one warning; a store that fails otherwise (e.g. a corrupt
mlflow.db) means one warning naming it, and the stage goes on untracked.

The local store is recorded as the project-relative `sqlite:///mlflow.db`
(checkpoints, train_metrics.json), so a copied or moved project keeps writing
into its own store.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from tprepro.train.callbacks import Callback
from tprepro.train.requeue import INVOCATION_ENV

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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def warn(message: str) -> None:
    print(f"WARNING: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _store_lock() -> Iterator[None]:
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
    with _store_lock() if local else contextlib.nullcontext():
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


def invocation_key() -> str:
    """This pipeline invocation: the key Snakemake's onstart exported, else host, process group and
    the group leader's start time (all stages of one `dvc repro` share it)."""
    exported = os.environ.get(INVOCATION_ENV)
    if exported:
        return exported
    group = os.getpgrp()
    try:
        started = Path(f"/proc/{group}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        started = "?"
    return f"{socket.gethostname()}:{group}:{started}"


def _find_parent(client, experiment_id: str):
    found = client.search_runs([experiment_id], filter_string=f"tags.`{INVOCATION_TAG}` = '{invocation_key()}'",
                               max_results=1)
    return found[0] if found else None


def parent_run_id(client, experiment_id: str) -> str:
    """The parent run of this invocation in the experiment, created by the first job that asks
    (under the store lock when local: parallel jobs find one parent)."""
    local = client.tracking_uri.startswith("sqlite:")
    with _store_lock() if local else contextlib.nullcontext():
        found = _find_parent(client, experiment_id)
        if found is not None:
            return found.info.run_id
        return client.create_run(experiment_id, run_name="pipeline",
                                 tags={INVOCATION_TAG: invocation_key(), **source_tags()}).info.run_id


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
            warn(f"MLflow store {describe_store(uri)} failed ({_first_line(exc)}); the pipeline runs "
                 f"without parent runs")
            return
        warn(f"MLflow tracking server {uri} unreachable ({_first_line(exc)}); this invocation tracks "
             f"into the local store {describe_store(local_uri())}")
        os.environ["MLFLOW_TRACKING_URI"] = local_uri()
        start_parent_runs(experiments)


def finish_parent_run(experiment: str | Experiment, status: str = "FINISHED", owner: bool = False) -> None:
    """Close this invocation's parent run in `experiment` (deleted if no run became its child).

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
        if children:
            client.set_terminated(run_id, status)
        else:
            client.delete_run(run_id)
    except Exception as exc:
        warn(f"MLflow store {describe_store(uri)}: could not end the pipeline's parent run "
             f"{run_id or ''} in '{as_experiment(experiment).name}' ({_first_line(exc)}); its outputs are unaffected")


def log_file() -> Path | None:
    """The file this process's output goes to (a stage's `> {log} 2>&1`), None for a terminal or pipe."""
    try:
        target = Path(os.readlink("/proc/self/fd/1"))
    except OSError:
        return None
    return target if target.is_file() else None


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def source_tags() -> dict[str, str]:
    """The code a run comes from, in MLflow's own fields (shown in the UI's Source column) and as
    `git_commit` (with "-dirty" when tracked files had uncommitted changes)."""
    commit = git_commit()
    tags = {"git_commit": commit, "mlflow.source.type": "LOCAL", "mlflow.source.name": "tprepro"}
    if commit != "unknown":
        tags["mlflow.source.git.commit"] = commit.removesuffix("-dirty")
    return tags


# Where a job ran: MLflow tag -> environment variable (set by SLURM inside a job).
JOB_ENVIRONMENT = {
    "slurm.job_id": "SLURM_JOB_ID",
    "slurm.array_job_id": "SLURM_ARRAY_JOB_ID",
    "slurm.array_task_id": "SLURM_ARRAY_TASK_ID",
    "slurm.partition": "SLURM_JOB_PARTITION",
    "slurm.node": "SLURMD_NODENAME",
    "slurm.job_gpus": "SLURM_JOB_GPUS",
    "slurm.step_gpus": "SLURM_STEP_GPUS",
    "cuda_visible_devices": "CUDA_VISIBLE_DEVICES",
}


def job_environment_tags() -> dict[str, str]:
    """The scheduler's job ID and GPU allocation as MLflow tags (empty outside a SLURM job)."""
    return {tag: os.environ[name] for tag, name in JOB_ENVIRONMENT.items() if os.environ.get(name)}


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
        warn(f"MLflow store {describe_store(self.uri)} failed ({_first_line(exc)}); run '{self.name}' "
             f"is not tracked from here on, the stage's outputs are unaffected")

    def _fall_back(self, exc: Exception) -> None:
        lost = self.run_id
        warn(f"MLflow tracking server {self.uri} unreachable ({_first_line(exc)}); "
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
        page = f"#/experiments/{self.experiment_id}/runs/{self.run_id}?workflowType=machine_learning"  # training view
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
        self._call("log_inputs", inputs)

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


def _log_model(client, run_id: str, directory: str, name: str, model_type: str) -> None:
    from mlflow.entities import LoggedModelStatus

    experiment_id = client.get_run(run_id).info.experiment_id
    earlier = [model for model in client.search_logged_models([experiment_id], filter_string=f"name = '{name}'")
               if model.source_run_id == run_id]
    model = client.create_logged_model(experiment_id, name=name, source_run_id=run_id, model_type=model_type)
    client.log_model_artifacts(model.model_id, directory)
    client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    for old in earlier:
        client.delete_logged_model(old.model_id)


class MLflowCallback(Callback):
    """Logs a training job: resolved settings, data hashes, step metrics, checkpoints.

    The run's id and store go into the job's `extra` (hence the checkpoint), so a
    resumed job continues the same run, also after a fallback to the local store.
    """

    def __init__(self, experiment: str | Experiment, params: dict, tags: dict,
                 datasets: dict[str, DatasetRecord] | None = None):
        self.experiment = experiment
        self.params = params
        self.datasets = datasets or {}
        self.tags = tags
        self.run: Run | None = None
        self.extra: dict = {}

    def on_train_start(self, trainer) -> None:
        self.extra = trainer.job.extra
        run_id = self.extra.get("mlflow_run_id")  # set when resuming
        self.run = Run(self.experiment, trainer.name, run_id=run_id, tags=self.tags,
                       tracking_uri=self.extra.get("mlflow_tracking_uri"))
        if self.run.run_id is not None:
            print(f"[{trainer.name}] MLflow run {self.run.run_id} in experiment "
                  f"'{as_experiment(self.experiment).name}' ({describe_store(self.run.uri)}): {self.run.url}",
                  file=sys.stderr, flush=True)
        if self.run.run_id != run_id:  # a new run (or a fallback from the one being resumed)
            self.run.log_params(self.params)
            self.run.log_datasets(self.datasets)
            self.logged: set[int] = set()
        else:  # steps past the checkpoint that the interrupted attempt already logged
            self.logged = {s for s in self.run.logged_steps("loss") if s > trainer.step}
        self._remember()

    def _remember(self) -> None:
        if self.run.run_id is not None:
            self.extra.update(mlflow_run_id=self.run.run_id, mlflow_tracking_uri=self.run.recorded_uri)

    def on_log(self, step: int, metrics: dict[str, float]) -> None:
        if step in self.logged:  # replayed after a resume: the same values are already there
            return
        self.run.log_metrics(metrics, step)
        self._remember()

    def on_checkpoint(self, step: int, path: Path) -> None:
        self.run.set_tag("checkpoint", path)  # as given (project-relative in the pipeline)

    def on_preempted(self, step: int) -> None:
        self.run.finish("KILLED")  # the requeued job reopens it as RUNNING

    def on_train_failed(self, step: int, error: BaseException) -> None:
        self.run.finish("FAILED")

    def on_train_end(self, summary: dict) -> None:
        numbers = {k: v for k, v in summary.items() if isinstance(v, (int, float)) and v is not None}
        self.run.log_metrics({f"train.{k}": v for k, v in numbers.items()}, summary["steps"])
        self.run.finish()
        self._remember()
