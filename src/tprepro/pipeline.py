"""The skeletons every experiment's stages share, written once.

- `model_config`: a named model's resolved architecture (preset + overrides);
- `train_model`: train on datasets, export model.pt and train_metrics.json, track in MLflow;
- `heldout_settings`: the held-out sample a training job scores at every checkpoint (learning curve);
- `published_rows`: each model's row in the paper's table, shown beside ours;
- `training_run`, `read_train_metrics`: reopen a training job's record for evaluation;
- `write_evaluation`, `write_role_sharpness`: per-module scores as CSV + MLflow metrics;
- `publish_table`: a table's files written together, DVC metrics, MLflow artifacts.

An experiment's `stages.py` reads its params section, opens its datasets and calls these.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tprepro.data.shards import Dataset
from tprepro.errors import TpreproError
from tprepro.io import atomic_files, atomic_write_text
from tprepro.params import TrainConfig
from tprepro.train.files import (CHECKPOINT_FILE, CURVE_FILE, MLFLOW_MODEL, MODEL_FILE, TRAIN_METRICS, no_trained_model,
                                 progress_log)

ROLE_SAMPLE = 64  # training rows whose role one-hotness is logged at every checkpoint (discrete-role models)


def require_model(params_path: str, models: Mapping, name: str, section: str) -> None:
    """Raise TpreproError if `name` is not one of `models` (the params mapping at `section`),
    naming the file and key, with a did-you-mean."""
    from tprepro.errors import suggestion

    if name not in models:
        raise TpreproError(f"{params_path}: {section}.{name}: no such model{suggestion(name, models)} "
                           f"(known: {', '.join(models)})")


def model_config(params: dict, name: str, section: str = "models"):
    """The resolved architecture of `<section>.<name>` (its preset plus overrides).

    `section` is a dotted path to a models mapping, e.g. "two_variable.models".
    """
    from tprepro.models.registry import resolve_model_config

    models = params
    for key in section.split("."):
        models = models[key]
    entry = dict(models[name])
    preset = entry.pop("preset")
    return resolve_model_config(preset, entry, where=f"{section}.{name}")


def published_rows(params: dict, names, table: str, section: str = "models") -> dict:
    """model name -> the paper's row of `table` for that model's architecture (None where the paper has none)."""
    from tprepro.report.published import published

    paper = published(table)
    rows = {}
    for name in names:
        config = model_config(params, name, section)
        rows[name] = paper.row_for(config.arch, config.binding)
    return rows


def heldout_settings(params: dict, datasets: Sequence[Dataset], seed: int, train: dict | None = None):
    """The learning-curve sample of a training job: `train.curve_sample` rows of `datasets`
    (held-out splits), decoded with the evaluation's answer cap (`evaluate.max_answer_length`) in batches of
    the training batch (so that no other evaluation setting is read by a training)."""
    from tprepro.evaluate.curves import HeldOut, heldout_sample

    train = train or params["train"]
    return HeldOut(heldout_sample(datasets, train["curve_sample"], seed),
                   max_len=params["evaluate"]["max_answer_length"], batch_size=train["batch_size"])


@dataclass(frozen=True)
class TrainingRun:
    """One training job as an experiment's train stage describes it to `train_model`."""

    name: str  # the model's name in the params file
    seed: int
    model: Any  # its ModelConfig (architecture, resolved from its preset)
    config: TrainConfig  # the training settings
    datasets: dict[str, Dataset]  # the training datasets by label (one stream reader each)
    vocab_path: Path  # the vocabulary file the data stage wrote (read unless `codec` is given)
    out: Path  # gets model.pt, train_metrics.json and (with `heldout`) learning_curve.csv
    checkpoints: Path  # the resumable checkpoint's folder
    experiment: Any  # the MLflow experiment (a tracking.store.Experiment)
    data_settings: dict  # the data settings, logged as the run's params
    run_prefix: str = ""  # the MLflow run is `<run_prefix><name>-s<seed>`: "<task>/" where an experiment has several
    codec: Any = None  # turns rows into batches (default: the character vocabulary at vocab_path)
    heldout: Any = None  # an evaluate.curves.HeldOut scored at every checkpoint: the learning curve


def train_model(run: TrainingRun) -> dict:
    """Train `run.model` on `run.datasets`; write model.pt and train_metrics.json.

    The dataset-agnostic core of every training stage: an MLflow run in `run.experiment` (with its
    `log_models`, model.pt and train_metrics.json go into the run's logged MLflow model `model`, the
    job's log file under logs/), resumable from `checkpoints/checkpoint.pt`. With `run.heldout` its
    rows are scored at every checkpoint: the learning curve, logged as step metrics and written to
    `out/learning_curve.csv`.
    """
    import hashlib

    from tprepro.data.shards import read_columns
    from tprepro.data.vocab import Vocab
    from tprepro.evaluate.curves import LearningCurve
    from tprepro.evaluate.pyfunc import log_answering_model
    from tprepro.models.registry import arch_settings
    from tprepro.evaluate.roles import RoleSharpnessCallback, has_discrete_roles
    from tprepro.tracking.callback import MLflowCallback
    from tprepro.tracking.provenance import job_environment_tags
    from tprepro.tracking.run import DatasetRecord
    from tprepro.tracking.store import as_experiment
    from tprepro.train.callbacks import ProgressBar
    from tprepro.train.distributed import World
    from tprepro.train.trainer import Trainer, TrainJob

    name, seed, model, config, datasets = run.name, run.seed, run.model, run.config, run.datasets
    out, checkpoints, codec, heldout = run.out, run.checkpoints, run.codec, run.heldout
    hashes = {label: ds.fingerprint() for label, ds in datasets.items()}
    job = TrainJob(
        name=f"{run.run_prefix}{name}-s{seed}",
        seed=seed,
        model=model,
        config=config,
        files=[ds.files for ds in datasets.values()],  # one stream reader per dataset
        vocab=codec if codec is not None else Vocab.load(run.vocab_path),
        data_fingerprint=hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest(),
    )
    logger = MLflowCallback(
        run.experiment,
        params={"model_name": name, "seed": seed, "model": arch_settings(job.model),
                "train": asdict(job.config), "data": run.data_settings, "vocab_size": len(job.vocab)},
        tags={"stage": "train", "model": name, "seed": seed, "mlflow.note.content": run_description(
                  name, seed, model, config, datasets), **job_environment_tags()},
        datasets={label: DatasetRecord(str(ds.directory), hashes[label], ds.rows, len(ds.files))
                  for label, ds in datasets.items()},
    )
    curve = heldout is not None and bool(heldout.rows)
    finished = finished_run(out, job, [CURVE_FILE] if curve else [])
    if finished is not None:
        print(f"[{job.name}] {out / MODEL_FILE} is already trained to step {finished['steps']} under these "
              f"settings; nothing to do (its {TRAIN_METRICS} is kept)")
        return finished
    world = World.from_env()
    progress = ProgressBar(mirror=progress_log(as_experiment(run.experiment).name, job.name) if world.is_main else None)
    trainer = Trainer(job, checkpoints / CHECKPOINT_FILE, callbacks=[progress, logger], world=world,
                      kept_with=[CURVE_FILE] if curve else [])

    def log_step_metrics(metrics: dict, step: int) -> None:  # training-time evaluations of this run
        if logger.run is not None:
            logger.run.log_metrics(metrics, step=step)

    if trainer.world.is_main and has_discrete_roles(trainer.model):  # role one-hotness while training
        columns = tuple(getattr(job.vocab, "columns", ("question", "answer")))
        sample = read_columns(next(iter(datasets.values())).files[0], columns).slice(0, ROLE_SAMPLE)
        rows = list(zip(*(sample.column(name).to_pylist() for name in columns)))
        trainer.callbacks.append(RoleSharpnessCallback(rows, batch_size=ROLE_SAMPLE, log_metrics=log_step_metrics))
    learning_curve = None
    if trainer.world.is_main and curve:
        learning_curve = LearningCurve(heldout, checkpoints / CURVE_FILE, out / CURVE_FILE,
                                       log_metrics=log_step_metrics)
        trainer.callbacks.append(learning_curve)
    summary = trainer.fit()
    if trainer.finished is not None and learning_curve is not None:  # trained before, outputs lost: re-create
        learning_curve.export_curve()
    trainer.export(out / MODEL_FILE)
    trainer.close()
    if not trainer.world.is_main:  # data-parallel rank > 0: rank 0 reports
        return summary
    summary.update(model=name, seed=seed, mlflow_run_id=job.extra.get("mlflow_run_id"),
                   mlflow_tracking_uri=job.extra.get("mlflow_tracking_uri"),
                   checkpoint=str(checkpoints / CHECKPOINT_FILE))
    atomic_write_text(out / TRAIN_METRICS, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if logger.run is not None:
        logger.run.set_tag("model_path", out / MODEL_FILE)
        if as_experiment(run.experiment).log_models:  # an MLflow model: load_model("runs:/<id>/<its name>")
            source = getattr(job.vocab, "columns", ("question", "answer"))[0]  # question or document
            example = str(read_columns(next(iter(datasets.values())).files[0], (source,)).column(0)[0])
            log_answering_model(logger.run, out, job.vocab, example, checkpoints / MLFLOW_MODEL,
                                logged_model_name(run.experiment, logger.run.name))
        log_outputs(logger.run, [], "model")
    return summary


def logged_model_name(experiment, job: str) -> str:
    """The MLflow logged model of a training run named `job`: `<experiment>-<job>`, slashes made dashes,
    e.g. tprepro-mathematics-transformer-s1, so that the Models tab tells them apart."""
    from tprepro.tracking.store import as_experiment

    return f"{as_experiment(experiment).name}-{job.replace('/', '-')}"


def log_outputs(run, paths: Sequence[Path], artifact_path: str) -> None:
    """`paths` as artifacts of `run` under `artifact_path`, and the stage's log file (its redirected
    output, if any) under logs/: what a user opens from the run's page."""
    from tprepro.tracking.provenance import log_file

    for path in paths:
        run.log_artifact(path, artifact_path)
    log = log_file()
    if log is not None:
        run.log_artifact(log, "logs")


def run_description(name: str, seed: int, model, config: TrainConfig, datasets: Mapping[str, Dataset]) -> str:
    """The training run's description in the MLflow UI (markdown): what was trained on what."""
    sizes = f"d_model {model.d_model}, {model.n_encoder_layers}+{model.n_decoder_layers} layers, {model.n_heads} heads"
    shown = ", ".join(sorted(datasets)[:6]) + (f" and {len(datasets) - 6} more" if len(datasets) > 6 else "")
    return (f"**{name}** (arch `{model.arch}`, binding `{model.binding}`; {sizes}), seed {seed}: "
            f"{config.steps} steps of batch {config.batch_size}, lr {config.lr:g}, on {shown}.")


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


def training_run(experiment, summary: dict):
    """The training job's MLflow run (from its train_metrics.json), reopened for evaluation results."""
    from tprepro.tracking.run import Run

    return Run(experiment, summary["name"], run_id=summary["mlflow_run_id"],
               tracking_uri=summary.get("mlflow_tracking_uri"))


def write_evaluation(rows: list[dict], out: Path, run, step: int,
                     metric_name: Callable[[str], str] | None = None,
                     metrics: Callable[[list[dict]], dict[str, float]] | None = None) -> None:
    """Write the per-(split, module) rows as CSV (its digest beside it) and log them to `run` (the model's training run):
    the CSV as its table artifact (evaluation/), the mean accuracy per split as `acc.<split>.mean`.

    `metric_name` (for a few rows, e.g. N2F's metrics): also one metric per row, `acc.<split>.<name>`,
    named by mapping the row's module label to an MLflow-safe name part. `metrics`: instead, the
    experiment's own metrics of the rows (for scores that are not accuracies, e.g. ROUGE).
    """
    import pandas as pd

    from tprepro.report.tables import EVAL_COLUMNS, write_digested_csv

    frame = pd.DataFrame(rows, columns=EVAL_COLUMNS)
    write_digested_csv(frame, out)
    if metrics is not None:
        logged = metrics(rows)
    else:
        logged = {f"acc.{r['split']}.{metric_name(r['module'])}": r["accuracy"] for r in rows} if metric_name else {}
        logged.update({f"acc.{split}.mean": g["accuracy"].mean() for split, g in frame.groupby("split")})
    run.log_metrics(logged, step=step)
    run.log_artifact(out, "evaluation")


def evaluate_trained(model_dir: Path, device: str, experiment, out: Path,
                     score: Callable[[Any, Any, dict], list[dict]],
                     metric_name: Callable[[str], str] | None = None,
                     extra: Callable[[Any, Any, Any, dict], None] | None = None,
                     metrics: Callable[[list[dict]], dict[str, float]] | None = None) -> None:
    """The evaluate stage of every experiment scored per (split, module): load the trained model in
    `model_dir` onto `device`; `score(model, vocab, summary)` gives its rows (split, module,
    accuracy, n, ...); print them and write them to `out` (CSV) and to the model's MLflow run in
    `experiment` (write_evaluation, with `metric_name` or `metrics`); then `extra(model, vocab, run, summary)`
    writes any further outputs (e.g. role sharpness) to the same run."""
    from tprepro.evaluate.evaluate import load_trained
    from tprepro.train.device import pick_device

    summary = read_train_metrics(model_dir)
    model, vocab, _ = load_trained(model_dir / MODEL_FILE, pick_device(device))
    rows = [{"model": summary["model"], "seed": summary["seed"], **result} for result in score(model, vocab, summary)]
    for row in rows:
        print(f"{row['split']:>14} {row['module']:<40} {row['accuracy']:.4f} (n={row['n']})")
    with training_run(experiment, summary) as run:  # FAILED if a write fails
        write_evaluation(rows, out, run, summary["steps"], metric_name, metrics)
        if extra is not None:
            extra(model, vocab, run, summary)
        run.finish()


def write_role_sharpness(model, vocab, rows: list[tuple[str, str]], batch_size: int, out: Path, run,
                         summary: dict) -> None:
    """The share of sharp role attentions (evaluate/roles.py) on `rows` of a discrete-role model, written to
    `<out stem>.roles.json` beside the eval CSV and logged as `role_sharpness` and, per sub-layer,
    `role_sharpness/enc0.self`, `role_sharpness/dec0.cross`, ...; for another model the file says
    `"role_sharpness": null` (every evaluation writes it, so that it is a declared output)."""
    from tprepro.evaluate.files import role_sharpness_path
    from tprepro.evaluate.roles import has_discrete_roles, role_sharpness, sharpness_metrics

    path = role_sharpness_path(out)
    result = {"model": summary["model"], "seed": summary["seed"]}
    if not has_discrete_roles(model):
        atomic_write_text(path, json.dumps({**result, "role_sharpness": None}, indent=2, sort_keys=True) + "\n")
        return
    result.update(role_sharpness(model, vocab, rows, batch_size))
    atomic_write_text(path, json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"role sharpness (max > {result['threshold']}): {result['role_sharpness']:.3f} "
          f"of {result['role_distributions']} distributions -> {path}")
    run.log_metrics(sharpness_metrics(result), step=summary["steps"])
    run.log_artifact(path, "evaluation")


def training_summaries(models_dir: Path, runs: Mapping[str, tuple[str, int]]) -> dict[str, dict]:
    """model -> the train_metrics.json of its first run in `runs` ({run directory: (model, seed)}):
    parameters, steps and timing, which the tables report per model (equal across seeds)."""
    summaries: dict[str, dict] = {}
    for run, (model, _) in runs.items():
        if model not in summaries:
            summaries[model] = read_train_metrics(models_dir / run)
    return summaries


def final_losses(models_dir: Path, runs: Mapping[str, tuple[str, int]]) -> dict[str, float]:
    """model -> the last logged training loss of its runs in `runs`, mean over seeds: a headline that
    moves with training while the accuracies are still 0, as in a first DVC experiment's comparison."""
    losses: dict[str, list[float]] = {}
    for run, (model, _) in runs.items():
        losses.setdefault(model, []).append(read_train_metrics(models_dir / run)["final_loss"])
    return {model: sum(values) / len(values) for model, values in losses.items()}


def read_train_metrics(model_dir: Path) -> dict:
    path = model_dir / TRAIN_METRICS
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise no_trained_model(model_dir, TRAIN_METRICS) from exc
    except json.JSONDecodeError as exc:
        raise TpreproError(f"{path}: not valid JSON ({exc})") from exc




def publish_table(experiment, run_name: str, tags: dict, table, markdown: str, out: Mapping[str, Path],
                  headline: tuple[str, Mapping[str, str]],
                  extra: Mapping[Path, Callable[[Path], None]] | None = None,
                  metric_name: Callable[[str], str] = str,
                  losses: Mapping[str, float] | None = None) -> None:
    """Publish one experiment's table: `table` as CSV (out["table_csv"]), `markdown` as written
    (out["table_md"]) and as an HTML page (out["table_html"], for the Snakemake report), the DVC
    metrics file (out["metrics"]: `headline` = (label, {metric: table column}) gives each model's
    headline numbers, which `dvc metrics show` names `<label>.<metric>.<model>`, and `losses` each
    model's final training loss as `<label>.train_loss.<model>`; one short line for the file) and every file of `extra` ({path: write(path)}: figures, further tables) are
    replaced together or not at all. Then the numbers go to an MLflow run `run_name` (as
    `table.<model>.<column>`: the table's, over seeds, apart from the runs' own metrics) with the
    files (and the stage's log) as artifacts, and the invocation's parent run in `experiment` is closed
    (DVC has no end-of-pipeline hook)."""
    from tprepro.report.html import markdown_page
    from tprepro.report.tables import headline_metrics, write_csv, write_metrics
    from tprepro.tracking.parents import finish_parent_run
    from tprepro.tracking.run import Run
    from tprepro.tracking.store import as_experiment

    title = as_experiment(experiment).name  # the page's: e.g. tprepro-two-variable tables
    writers = {out["table_csv"]: lambda path: write_csv(table, path),
               out["table_md"]: lambda path: path.write_text(markdown, encoding="utf-8"),
               out["table_html"]: lambda path: path.write_text(markdown_page(markdown, f"{title} {run_name}"),
                                                            encoding="utf-8"),
               out["metrics"]: lambda path: write_metrics(headlines, path),
               **(extra or {})}
    records = table.to_dict("records")
    headlines = headline_metrics(records, *headline)
    if losses:
        headlines[headline[0]]["train_loss"] = dict(losses)
    with atomic_files({str(path): path for path in writers}) as temporary:
        for path, write in writers.items():
            write(temporary[str(path)])
    run = Run(experiment, run_name, tags=tags)
    run.log_metrics({f"table.{row['model']}.{metric_name(key)}": value for row in records  # over seeds
                     for key, value in row.items()
                     if key != "model" and isinstance(value, (int, float)) and value == value})  # no NaN
    log_outputs(run, list(writers), "results")
    run.finish()
    finish_parent_run(experiment)
