"""Stages of the two-variable arithmetic experiment (Wangperawong 2018, Table 3).

data -> train (per model) -> evaluate (per model) -> tables. Settings come from
the `two_variable:` section of params.yaml; training and evaluation run through
the same dataset-agnostic core as the Mathematics stages (stages.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tprepro.params import TrainConfig, load_params
from tprepro.params.reads import for_the_record, peek
from tprepro.experiments.two_variable.settings import TRAIN_BUDGET, TRAIN_DEVICE, two_variable_train
from tprepro.data.shards import Dataset, open_dataset
from tprepro.errors import TpreproError
from tprepro.experiments import mlflow_experiment
from tprepro.pipeline import (evaluate_trained, final_losses, model_config, publish_table, published_rows,
                              require_model, training_summaries)

if TYPE_CHECKING:  # the training module is imported by the train stage alone (its declared code)
    from tprepro.training import TrainingRun

MODELS = "two_variable.models"


def data_stage(params_path: str, out: Path, vocab_out: Path) -> None:
    """Write `out/train`, `out/test` and the character vocabulary of the training split."""
    from tprepro.experiments.two_variable.data import write_two_variable
    from tprepro.data.vocab import build_vocab

    params = load_params(params_path, models=False)  # builds no model
    settings = params["two_variable"]["data"]
    directories = write_two_variable(out, **settings)
    vocab = build_vocab([open_dataset(directories["train"])], params["vocab"]["min_count"])
    vocab.save(vocab_out)
    for split, directory in directories.items():
        print(f"{split}: {open_dataset(directory).rows} problems -> {directory}")
    print(f"vocabulary: {len(vocab)} symbols -> {vocab_out}")


def train_stage(params_path: str, name: str, seed: int, train_dir: Path, vocab_path: Path, out: Path,
                checkpoints: Path, heldout_dir: Path) -> dict:
    """Train one (model, seed); the learning curve scores a sample of `heldout_dir` (the test split)."""
    from tprepro.training import heldout_settings, train_model

    params = load_params(params_path)
    section = params["two_variable"]
    require_model(params_path, peek(section, "models"), name, MODELS)
    heldout = heldout_settings(params, [open_dataset(heldout_dir)], seed, two_variable_train(params))
    return train_model(training_run(params, name, seed, {"train": open_dataset(train_dir)}, checkpoints, out,
                                    vocab_path, heldout=heldout))


def training_run(params: dict, name: str, seed: int, datasets: Mapping[str, Dataset], checkpoints: Path,
                 out: Path | None = None, vocab_path: Path | None = None, codec=None, heldout=None) -> TrainingRun:
    """One (model, seed) as this experiment trains it, in its train stage and in the benchmarks: the model of
    two_variable.models, `train:` under `two_variable.train:`, on `datasets` with the vocabulary at `vocab_path`
    (or `codec`)."""
    from tprepro.training import TrainingRun

    return TrainingRun(name, seed, model_config(params, name, MODELS),
                       TrainConfig.from_params({"train": two_variable_train(params)}), dict(datasets), vocab_path, out,
                       checkpoints, mlflow_experiment(params, "two_variable"),
                       data_settings=for_the_record(params["two_variable"]["data"]), codec=codec, heldout=heldout)


def evaluate_stage(params_path: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """Exact-match accuracy on the test split, one row per expression type."""
    from tprepro.data.shards import iter_rows
    from tprepro.experiments.two_variable.data import METRIC_NAMES, TEST, TYPES
    from tprepro.evaluate.evaluate import EvalSet, score

    params = load_params(params_path)
    settings = params["evaluate"]
    by_type: dict[str, list[tuple[str, str]]] = {label: [] for label in TYPES}
    for row in iter_rows(open_dataset(test_dir), columns=("question", "answer", "module")):
        if row["module"] not in by_type:
            raise TpreproError(f"{test_dir}: unknown expression type {row['module']!r}")
        by_type[row["module"]].append((row["question"], row["answer"]))

    def score_types(model, vocab, summary: dict) -> list[dict]:
        return [score(model, vocab, EvalSet(TEST, label, pairs), settings["batch_size"],
                      settings["max_answer_length"]) for label, pairs in by_type.items()]

    evaluate_trained(model_dir, TRAIN_DEVICE.values(params)["device"], mlflow_experiment(params, "two_variable"),
                     out, score_types, METRIC_NAMES.__getitem__)


def tables_stage(params_path: str, eval_dir: Path, models_dir: Path, out: Mapping[str, Path]) -> None:
    """Table 3's shape: accuracy per expression type and overall, plus training wall time, per model;
    and the models' learning curves; written to the paths of `out` (table_csv, table_md, metrics, curves)
    and the DVC plots' data (plot, curve_plot)."""
    from tprepro.experiments.two_variable.data import metric_name
    from tprepro.experiments.two_variable.table import type_table, type_table_markdown
    from tprepro.report.curves import curve_figure, read_curves
    from tprepro.report.plots import write_bars, write_curves
    from tprepro.report.tables import module_table, read_eval

    params = load_params(params_path)
    names = list(params["two_variable"]["models"])
    runs = {f"{name}-s{seed}": (name, seed) for name in names for seed in params["two_variable"]["seeds"]}
    curves = read_curves(models_dir, runs)
    evals = read_eval([eval_dir / f"{run}.csv" for run in runs], counts=True)  # exact-match hits
    training = training_summaries(models_dir, runs)
    table = type_table(evals, training)

    train = TRAIN_BUDGET.values(params)
    budget = (f"{train['steps']} steps of batch {train['batch_size']}, "
              f"{params['two_variable']['data']['size']} problems")
    markdown = type_table_markdown(table, published_rows(params, names, "two_variable", MODELS), budget)
    figures = {out["curves"]: lambda path: curve_figure(
        curves, path, f"Two-variable arithmetic: learning curves on the test split ({budget})"),
        out["plot"]: lambda path: write_bars(module_table(evals), path),
        out["curve_plot"]: lambda path: write_curves(curves, path)}
    publish_table(mlflow_experiment(params, "two_variable"), "tables", {"stage": "two_variable_tables"}, table,
                  markdown, out, ("two_variable", {"overall_acc": "overall"}), figures, metric_name=metric_name,
                  losses=final_losses(models_dir, runs))
    print(markdown)
