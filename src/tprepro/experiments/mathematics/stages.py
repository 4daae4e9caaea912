"""Stages of the Mathematics Dataset experiment (Schlag et al.): vocab, train, evaluate, tables.

Each function backs one `tprepro` sub-command (see cli.py); Snakemake and DVC call those
commands, tests may call these functions directly. The shared skeletons are in pipeline.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from tprepro.params import TrainConfig, load_params
from tprepro.params.reads import for_the_record, peek
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE
from tprepro.data.shards import Dataset, open_dataset
from tprepro.experiments import mlflow_experiment
from tprepro.pipeline import (evaluate_trained, final_losses, model_config, publish_table, published_rows,
                              require_model, training_summaries, write_role_sharpness)

if TYPE_CHECKING:  # the training module is imported by the train stage alone (its declared code)
    from tprepro.training import TrainingRun


def module_datasets(split_dirs: Sequence[Path], modules: Sequence[str]) -> list[tuple[str, str, Dataset]]:
    """(split, module, dataset) for every module of the grid under each split directory."""
    return [(d.name, m, open_dataset(d / m)) for d in split_dirs for m in modules]


def build_vocab_stage(params_path: str, train_dirs: Sequence[Path], out: Path) -> None:
    from tprepro.data.vocab import build_vocab

    params = load_params(params_path, models=False)  # builds no model
    datasets = [ds for _, _, ds in module_datasets(train_dirs, params["grid"]["modules"])]
    vocab = build_vocab(datasets, params["vocab"]["min_count"])
    vocab.save(out)
    print(f"vocabulary: {len(vocab)} symbols -> {out}")


def training_run(params: dict, name: str, seed: int, datasets: Mapping[str, Dataset], checkpoints: Path,
                 out: Path | None = None, vocab_path: Path | None = None, codec=None, heldout=None) -> TrainingRun:
    """One (model, seed) as this experiment trains it, in its train stage and in the benchmarks: the model's
    architecture, the `train:` settings and the MLflow experiment of `params`, on `datasets` ({split/module: ...})
    with the vocabulary at `vocab_path` (or `codec`)."""
    from tprepro.training import TrainingRun

    return TrainingRun(name, seed, model_config(params, name), TrainConfig.from_params(params), dict(datasets),
                       vocab_path, out, checkpoints, mlflow_experiment(params, "mathematics"),
                       data_settings=for_the_record(params["data"]), codec=codec, heldout=heldout)


def train_stage(params_path: str, name: str, seed: int, train_dirs: Sequence[Path], vocab_path: Path,
                out: Path, checkpoints: Path, heldout_dir: Path) -> dict:
    """Train one (model, seed); the learning curve scores a sample of `heldout_dir` (the interpolate split)."""
    from tprepro.training import heldout_settings, train_model

    params = load_params(params_path)
    require_model(params_path, peek(params, "models"), name, "models")
    modules = params["grid"]["modules"]
    datasets = {f"{split}/{module}": ds for split, module, ds in module_datasets(train_dirs, modules)}
    heldout = heldout_settings(params, [ds for _, _, ds in module_datasets([heldout_dir], modules)], seed)
    return train_model(training_run(params, name, seed, datasets, checkpoints, out, vocab_path, heldout=heldout))


def evaluate_stage(params_path: str, model_dir: Path, interpolate_dir: Path, extrapolate_dir: Path,
                   train_dirs: Sequence[Path], out: Path) -> None:
    """Accuracy per module on interpolate, extrapolate and a sample of the training data, and (for
    discrete roles) the role sharpness on the test sets."""
    from tprepro.evaluate.evaluate import full_set, score, train_sample

    params = load_params(params_path)
    settings, grid = params["evaluate"], params["grid"]
    sets = []  # the evaluation sets, built when the model is loaded

    def score_sets(model, vocab, summary: dict) -> list[dict]:
        sets.extend(full_set(INTERPOLATE, m, open_dataset(interpolate_dir / m)) for m in grid["modules"])
        sets.extend(full_set(EXTRAPOLATE, m, open_dataset(extrapolate_dir / m))
                    for m in grid["extrapolation_modules"])
        for module in grid["modules"]:
            per_split = [open_dataset(d / module) for d in train_dirs]
            sets.append(train_sample(module, per_split, settings["train_sample"], summary["seed"]))
        return [score(model, vocab, s, settings["batch_size"], settings["max_answer_length"]) for s in sets]

    def roles(model, vocab, run, summary: dict) -> None:
        test_rows = [row for eval_set in sets if eval_set.split != "train" for row in eval_set.rows]
        write_role_sharpness(model, vocab, test_rows, settings["batch_size"], out, run, summary)

    evaluate_trained(model_dir, params["train"]["device"], mlflow_experiment(params, "mathematics"), out,
                     score_sets, extra=roles)


def set_sizes(params: dict):
    """(split, module) -> (the most problems its evaluation set holds, the params key saying so), or None
    where the params do not say: the train sample's `evaluate.train_sample`, and a generated test split's
    `data.test_per_module`."""
    def size(split: str, module: str) -> tuple[int, str] | None:
        if split == "train":
            return params["evaluate"]["train_sample"], "evaluate.train_sample"
        if split in (INTERPOLATE, EXTRAPOLATE) and params["data"]["source"] == "generate":
            return params["data"]["test_per_module"], "data.test_per_module"
        return None

    return size


def tables_stage(params_path: str, eval_dir: Path, models_dir: Path, out: Mapping[str, Path]) -> None:
    """Table 1, the per-module table and figure and the learning curves, written to the paths of
    `out` (table_csv, table_md, metrics, modules_csv, figure, curves) and the DVC plots' data (plot,
    curve_plot)."""
    from tprepro.experiments.mathematics.figures import module_figure
    from tprepro.report.curves import curve_figure, read_curves
    from tprepro.report.plots import write_bars, write_curves
    from tprepro.report.tables import module_table, read_eval, table1, table1_markdown, write_csv

    params = load_params(params_path)
    grid, threshold = params["grid"], params["report"]["threshold"]
    runs = {f"{m}-s{s}": (m, s) for m in grid["models"] for s in grid["seeds"]}
    curves = read_curves(models_dir, runs)
    evals = read_eval([eval_dir / f"{run}.csv" for run in runs], counts=True, sizes=set_sizes(params))
    modules = module_table(evals)
    table = table1(evals, training_summaries(models_dir, runs), threshold)

    train = params["train"]
    budget = (f"{train['steps']} steps of batch {train['batch_size']} on {len(grid['modules'])} training modules, "
              f"{params['data']['test_per_module']} test problems per module")
    markdown = table1_markdown(table, threshold, len(grid["modules"]), len(grid["extrapolation_modules"]),
                               published_rows(params, grid["models"], "mathematics"), budget)
    figures = {
        out["modules_csv"]: lambda path: write_csv(modules, path),
        out["figure"]: lambda path: module_figure(
            modules, path, f"Mathematics Dataset: exact-match accuracy per module, pooled over seeds ({budget})"),
        out["curves"]: lambda path: curve_figure(
            curves, path, f"Mathematics Dataset: learning curves on the interpolate split ({budget})"),
        out["plot"]: lambda path: write_bars(modules, path),
        out["curve_plot"]: lambda path: write_curves(curves, path),
    }
    publish_table(mlflow_experiment(params, "mathematics"), "tables", {"stage": "tables"}, table, markdown, out,
                  ("mathematics", {"interpolation_acc": "interpolation_acc"}), figures,
                  losses=final_losses(models_dir, runs))
    print(markdown)
