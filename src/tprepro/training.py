"""One training run of an experiment, split along its seams:

- `TrainingRun`: what an experiment's `training_run(...)` describes (its train stage and the benchmarks use it);
- `training_job`, `trainer`: the TrainJob of a run and its Trainer at `<checkpoints>/checkpoint.pt`, the one
  set-up every training shares, tracked or not;
- `run_tracking`: the run's MLflow callback (params, tags, datasets);
- `extra_callbacks`: what scores the model while it trains (role one-hotness, the learning curve);
- `finish`: model.pt, train_metrics.json and the MLflow model of a trained run;
- `train_model`: those together, for a train stage (resumable; a finished run is not trained again);
- `heldout_settings`: the held-out sample a run scores at every checkpoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from tprepro.data.shards import Dataset
from tprepro.io import atomic_write_text
from tprepro.params import TrainConfig
from tprepro.train.files import CHECKPOINT_FILE, CURVE_FILE, MLFLOW_MODEL, MODEL_FILE, TRAIN_METRICS, progress_log

ROLE_SAMPLE = 64  # training rows whose role one-hotness is logged at every checkpoint (discrete-role models)


@dataclass(frozen=True)
class TrainingRun:
    """One training job as an experiment describes it (its `training_run(...)`)."""

    name: str  # the model's name in the params file
    seed: int
    model: Any  # its ModelConfig (architecture, resolved from its preset)
    config: TrainConfig  # the training settings
    datasets: dict[str, Dataset]  # the training datasets by label (one stream reader each)
    vocab_path: Path | None  # the vocabulary file the data stage wrote (read unless `codec` is given)
    out: Path | None  # gets model.pt, train_metrics.json and (with `heldout`) learning_curve.csv
    checkpoints: Path | None  # the resumable checkpoint's folder (None: a benchmark's, given to `trainer`)
    experiment: Any = None  # the MLflow experiment (a tracking.store.Experiment); None: untracked (a benchmark)
    data_settings: dict | None = None  # the data settings, logged as the run's params
    run_prefix: str = ""  # the MLflow run is `<run_prefix><name>-s<seed>`: "<task>/" where an experiment has several
    codec: Any = None  # turns rows into batches (default: the character vocabulary at vocab_path)
    heldout: Any = None  # an evaluate.curves.HeldOut scored at every checkpoint: the learning curve

    @functools.cached_property
    def data_hashes(self) -> dict[str, str]:
        """Each training dataset's hash, by label (taken once per run)."""
        return {label: ds.fingerprint() for label, ds in self.datasets.items()}

    @property
    def curve(self) -> bool:
        """Whether the run scores a learning curve."""
        return self.heldout is not None and bool(self.heldout.rows)


def heldout_settings(params: dict, datasets: Sequence[Dataset], seed: int, train: dict | None = None):
    """The learning-curve sample of a training job: `train.curve_sample` rows of `datasets`
    (held-out splits), decoded with the evaluation's answer cap (`evaluate.max_answer_length`) in batches of
    the training batch (so that no other evaluation setting is read by a training)."""
    from tprepro.evaluate.curves import HeldOut, heldout_sample

    train = train or params["train"]
    return HeldOut(heldout_sample(datasets, train["curve_sample"], seed),
                   max_len=params["evaluate"]["max_answer_length"], batch_size=train["batch_size"])


def training_job(run: TrainingRun):
    """The TrainJob of `run`: its settings, its shards (one stream reader per dataset), its codec, its data's hash."""
    from tprepro.data.vocab import Vocab
    from tprepro.train.trainer import TrainJob

    return TrainJob(
        name=f"{run.run_prefix}{run.name}-s{run.seed}",
        seed=run.seed,
        model=run.model,
        config=run.config,
        files=[ds.files for ds in run.datasets.values()],
        vocab=run.codec if run.codec is not None else Vocab.load(run.vocab_path),
        data_fingerprint=hashlib.sha256(json.dumps(run.data_hashes, sort_keys=True).encode()).hexdigest(),
    )


def trainer(run: TrainingRun, callbacks: Sequence = (), world=None, job=None, folder: Path | None = None):
    """The Trainer of `run` (of `job`, its TrainJob, if made already) at `<folder>/checkpoint.pt` (default: the
    run's checkpoints folder), resuming from it; with a learning curve, the curve's file is kept with each
    finished state."""
    from tprepro.train.trainer import Trainer

    checkpoint = Path(folder or run.checkpoints) / CHECKPOINT_FILE
    return Trainer(job or training_job(run), checkpoint, callbacks=list(callbacks), world=world,
                   kept_with=[CURVE_FILE] if run.curve else [])


def run_tracking(run: TrainingRun, job):
    """The MLflow callback of `run`: its settings as params, its description and environment as tags, its
    datasets (directory, hash, rows, shards)."""
    from tprepro.models.registry import arch_settings
    from tprepro.tracking.callback import MLflowCallback
    from tprepro.tracking.provenance import job_environment_tags
    from tprepro.tracking.run import DatasetRecord

    return MLflowCallback(
        run.experiment,
        params={"model_name": run.name, "seed": run.seed, "model": arch_settings(job.model),
                "train": asdict(job.config), "data": run.data_settings, "vocab_size": len(job.vocab)},
        tags={"stage": "train", "model": run.name, "seed": run.seed, "mlflow.note.content": run_description(
                  run.name, run.seed, run.model, run.config, run.datasets), **job_environment_tags()},
        datasets={label: DatasetRecord(str(ds.directory), run.data_hashes[label], ds.rows, len(ds.files))
                  for label, ds in run.datasets.items()},
    )


def extra_callbacks(run: TrainingRun, trainer, log_metrics: Callable[[dict, int], None]) -> list:
    """What scores the model while it trains (rank 0 only): the role one-hotness of a sample of training rows
    for a discrete-role model, and with `run.heldout` the learning curve (evaluate/curves.py)."""
    from tprepro.data.shards import read_columns
    from tprepro.evaluate.curves import LearningCurve
    from tprepro.evaluate.roles import RoleSharpnessCallback, has_discrete_roles

    if not trainer.world.is_main:
        return []
    found = []
    if has_discrete_roles(trainer.model):
        columns = tuple(getattr(trainer.job.vocab, "columns", ("question", "answer")))
        sample = read_columns(next(iter(run.datasets.values())).files[0], columns).slice(0, ROLE_SAMPLE)
        rows = list(zip(*(sample.column(name).to_pylist() for name in columns)))
        found.append(RoleSharpnessCallback(rows, batch_size=ROLE_SAMPLE, log_metrics=log_metrics))
    if run.curve:
        found.append(LearningCurve(run.heldout, run.checkpoints / CURVE_FILE, run.out / CURVE_FILE,
                                   log_metrics=log_metrics))
    return found


def finish(run: TrainingRun, trainer, summary: dict, logger) -> dict:
    """Export model.pt and write train_metrics.json (rank 0); with MLflow, tag the model's path and log the MLflow
    model (`log_models`) and the job's log. A run finished before whose outputs were lost re-creates its curve."""
    from tprepro.data.shards import read_columns
    from tprepro.evaluate.curves import LearningCurve
    from tprepro.evaluate.pyfunc import log_answering_model
    from tprepro.tracking.provenance import log_outputs
    from tprepro.tracking.store import as_experiment

    job = trainer.job
    if trainer.finished is not None:
        for curve in (cb for cb in trainer.callbacks if isinstance(cb, LearningCurve)):
            curve.export_curve()
    trainer.export(run.out / MODEL_FILE)
    trainer.close()
    if not trainer.world.is_main:  # data-parallel rank > 0: rank 0 reports
        return summary
    summary.update(model=run.name, seed=run.seed, mlflow_run_id=job.extra.get("mlflow_run_id"),
                   mlflow_tracking_uri=job.extra.get("mlflow_tracking_uri"),
                   checkpoint=str(run.checkpoints / CHECKPOINT_FILE))
    atomic_write_text(run.out / TRAIN_METRICS, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if logger.run is not None:
        logger.run.set_tag("model_path", run.out / MODEL_FILE)
        if as_experiment(run.experiment).log_models:  # an MLflow model: load_model("runs:/<id>/<its name>")
            source = getattr(job.vocab, "columns", ("question", "answer"))[0]  # question or document
            example = str(read_columns(next(iter(run.datasets.values())).files[0], (source,)).column(0)[0])
            log_answering_model(logger.run, run.out, job.vocab, example, run.checkpoints / MLFLOW_MODEL,
                                logged_model_name(run.experiment, logger.run.name))
        log_outputs(logger.run, [], "model")
    return summary


def train_model(run: TrainingRun) -> dict:
    """Train `run.model` on `run.datasets`; write model.pt and train_metrics.json.

    The dataset-agnostic core of every training stage: an MLflow run in `run.experiment` (with its
    `log_models`, model.pt and train_metrics.json go into the run's logged MLflow model `model`, the
    job's log file under logs/), resumable from `checkpoints/checkpoint.pt`. With `run.heldout` its
    rows are scored at every checkpoint: the learning curve, logged as step metrics and written to
    `out/learning_curve.csv`.
    """
    from tprepro.tracking.store import as_experiment
    from tprepro.train.callbacks import ProgressBar
    from tprepro.train.distributed import World

    job = training_job(run)
    logger = run_tracking(run, job)
    finished = finished_run(run.out, job, [CURVE_FILE] if run.curve else [])
    if finished is not None:
        print(f"[{job.name}] {run.out / MODEL_FILE} is already trained to step {finished['steps']} under these "
              f"settings; nothing to do (its {TRAIN_METRICS} is kept)")
        return finished
    world = World.from_env()
    progress = ProgressBar(mirror=progress_log(as_experiment(run.experiment).name, job.name) if world.is_main else None)
    training = trainer(run, [progress, logger], world, job)

    def log_step_metrics(metrics: dict, step: int) -> None:  # training-time evaluations of this run
        if logger.run is not None:
            logger.run.log_metrics(metrics, step=step)

    training.callbacks += extra_callbacks(run, training, log_step_metrics)
    return finish(run, training, training.fit(), logger)


def finished_run(out: Path, job, other_outputs: Sequence[str] = ()) -> dict | None:
    """The summary in `out/train_metrics.json` if `out/model.pt` is this job, trained to its last step,
    and every file of `other_outputs` (e.g. the learning curve) is in `out` too."""
    from tprepro.train.checkpoint import CheckpointError, load_checkpoint

    if not all((out / name).is_file() for name in (MODEL_FILE, TRAIN_METRICS, *other_outputs)):
        return None
    try:
        exported = load_checkpoint(out / MODEL_FILE)
        summary = json.loads((out / TRAIN_METRICS).read_text(encoding="utf-8"))
    except (CheckpointError, ValueError, UnicodeDecodeError) as exc:
        print(f"WARNING: {out}: existing outputs are not a finished run ({exc}); training")
        return None
    done = (exported.get("fingerprint") == job.fingerprint and exported.get("step") == job.config.steps
            and isinstance(summary, dict) and summary.get("steps") == job.config.steps)
    return summary if done else None


def run_description(name: str, seed: int, model, config: TrainConfig, datasets) -> str:
    """The training run's description in the MLflow UI (markdown): what was trained on what."""
    sizes = f"d_model {model.d_model}, {model.n_encoder_layers}+{model.n_decoder_layers} layers, {model.n_heads} heads"
    shown = ", ".join(sorted(datasets)[:6]) + (f" and {len(datasets) - 6} more" if len(datasets) > 6 else "")
    return (f"**{name}** (arch `{model.arch}`, binding `{model.binding}`; {sizes}), seed {seed}: "
            f"{config.steps} steps of batch {config.batch_size}, lr {config.lr:g}, on {shown}.")


def logged_model_name(experiment, job: str) -> str:
    """The MLflow logged model of a training run named `job`: `<experiment>-<job>`, slashes made dashes,
    e.g. tprepro-mathematics-transformer-s1, so that the Models tab tells them apart."""
    from tprepro.tracking.store import as_experiment

    return f"{as_experiment(experiment).name}-{job.replace('/', '-')}"
