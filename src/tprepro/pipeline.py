"""The skeletons every experiment's stages share, written once (training runs are tprepro.training's).

- `require_model`, `model_config`: a named model of the params and its resolved architecture (preset + overrides);
- `published_rows`: each model's row in the paper's table, shown beside ours;
- `tracked_run`, `read_train_metrics`: reopen a training job's record for evaluation;
- `write_evaluation`, `write_role_sharpness`: per-module scores as CSV + MLflow metrics;
- `publish_table`: a table's files written together, DVC metrics, MLflow artifacts.

An experiment's `stages.py` reads its params section, opens its datasets and calls these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from tprepro.errors import TpreproError
from tprepro.io import atomic_files, atomic_write_text
from tprepro.train.files import MODEL_FILE, TRAIN_METRICS, no_trained_model

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


def tracked_run(experiment, summary: dict):
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
    with tracked_run(experiment, summary) as run:  # FAILED if a write fails
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
    from tprepro.tracking.provenance import log_outputs
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
