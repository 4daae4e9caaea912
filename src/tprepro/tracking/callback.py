"""The trainer's MLflow callback: a training job's settings, step metrics and checkpoints."""

from __future__ import annotations

import sys
from pathlib import Path

from tprepro.tracking.run import DatasetRecord, Run
from tprepro.tracking.store import Experiment, as_experiment, describe_store
from tprepro.train.callbacks import Callback


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
