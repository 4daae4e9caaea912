"""The trainer's MLflow callback: a training job's settings, step metrics and checkpoints."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from tprepro.tracking.run import DatasetRecord, Run
from tprepro.tracking.store import Experiment, as_experiment, client_and_experiment, describe_store, resolve_uri
from tprepro.train.callbacks import Callback

SETTINGS_TAG = "tprepro.settings"  # digest of the settings a run logged as params
RESUMED_FROM_TAG = "tprepro.resumed_from_run"  # the run whose checkpoint a run under new settings continued


def settings_digest(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()


class MLflowCallback(Callback):
    """Logs a training job: resolved settings, data hashes, step metrics, checkpoints.

    The run's id, store and settings digest go into the job's `extra` (hence the checkpoint), so a
    resumed job continues the same run, also after a fallback to the local store. A job that resumes a
    checkpoint under other settings (more steps, say) starts a new run, tagged with the one it continued:
    the old run keeps describing the model it logged. A new run whose name the experiment already holds
    under other settings is named `<job>-<settings digest>`, and so is its logged model.
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
        self.settings = settings_digest(self.params)
        run_id = self.extra.get("mlflow_run_id")  # set when resuming
        tags = {**self.tags, SETTINGS_TAG: self.settings}
        if os.environ.get("DVC_EXP_NAME"):  # under `dvc exp run`
            tags["tprepro.dvc_experiment"] = os.environ["DVC_EXP_NAME"]
        if run_id is not None and self.extra.get("mlflow_settings", self.settings) != self.settings:  # (none: older)
            tags[RESUMED_FROM_TAG], run_id = run_id, None
            print(f"[{trainer.name}] resumed under other settings than MLflow run {tags[RESUMED_FROM_TAG]} "
                  f"logged: a new run continues it", file=sys.stderr, flush=True)
        name = trainer.name if run_id is not None else self._distinct_name(trainer.name)
        self.run = Run(self.experiment, name, run_id=run_id, tags=tags,
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

    def _distinct_name(self, name: str) -> str:
        """`name`, or `name-<settings digest>` when the experiment holds a run of that name under other
        settings (runs from before the settings tag count as the same); `name` if the store cannot say."""
        try:
            client, experiment_id = client_and_experiment(self.experiment,
                                                          resolve_uri(self.extra.get("mlflow_tracking_uri")))
            named = client.search_runs([experiment_id], filter_string=f"attributes.run_name = '{name}'",
                                       max_results=100)
        except Exception:  # an unreachable server: Run falls back and says so
            return name
        others = {run.data.tags.get(SETTINGS_TAG, self.settings) for run in named} - {self.settings}
        return f"{name}-{self.settings[:7]}" if others else name

    def _remember(self) -> None:
        if self.run.run_id is not None:
            self.extra.update(mlflow_run_id=self.run.run_id, mlflow_tracking_uri=self.run.recorded_uri,
                              mlflow_settings=self.settings)

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
