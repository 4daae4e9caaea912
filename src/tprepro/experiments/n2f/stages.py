"""Stages of the TP-N2F experiments (Chen et al. 2020): MathQA (Table 1) and AlgoLisp (Table 2).

Per task: data -> quality -> train (per model) -> evaluate (per model) -> tables.
Settings come from params.yaml `n2f:`; what differs between the tasks (loading,
gold-program checks, scoring, the table) lives in n2f_tasks.py. Training runs
through the same dataset-agnostic core as every other experiment
(training.train_model), with the tuple vocabularies as its codec.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tprepro.params import TrainConfig, load_params
from tprepro.params.reads import for_the_record, peek
from tprepro.experiments.n2f import VOCAB_FILE
from tprepro.experiments.n2f.settings import TRAIN_BUDGET, TRAIN_DEVICE, n2f_train
from tprepro.data.shards import Dataset, open_dataset, write_dataset
from tprepro.errors import TpreproError
from tprepro.experiments import mlflow_experiment
from tprepro.io import atomic_write_text
from tprepro.experiments.n2f.tasks import TEST, TRAIN, get_task
from tprepro.pipeline import (evaluate_trained, final_losses, model_config, publish_table, published_rows,
                              read_train_metrics, require_model, training_summaries)

if TYPE_CHECKING:  # the training module is imported by the train stage alone (its declared code)
    from tprepro.training import TrainingRun



def _task_settings(params: dict, task: str, params_path: str) -> dict:
    if task not in peek(params, "n2f", "tasks"):
        raise TpreproError(f"{params_path}: n2f.tasks: {task!r} is not listed")
    return params["n2f"][task]


def data_stage(params_path: str, task: str, out: Path) -> None:
    """Write `out/train`, `out/test` (parquet) and `out/vocab.json` (the training split's vocabularies)."""
    from tprepro.experiments.n2f.tuple_vocab import build_tuple_vocab

    params = load_params(params_path, models=False)  # builds no model
    spec = get_task(task)
    settings = _task_settings(params, task, params_path)["data"]
    splits = spec.load(settings)  # {"train": rows, "test": rows}
    out.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        if not rows:
            raise TpreproError(f"{params_path}: n2f.{task}.data: the {split} split has no examples")
        size = settings["rows_per_shard"]
        write_dataset(out / split, (rows[i : i + size] for i in range(0, len(rows), size)), spec.schema,
                      task=task, label=spec.split_label(settings, split))
        print(f"{split} ({spec.split_label(settings, split)}): {len(rows)} examples -> {out / split}")
    vocab = build_tuple_vocab(((r["question"], r["answer"]) for r in splits[TRAIN]), spec.arity,
                              params["vocab"]["min_count"])
    vocab.save(out / VOCAB_FILE)
    print(f"vocabularies: {len(vocab.words)} words, {len(vocab.relations)} relations, "
          f"{len(vocab.arguments)} arguments -> {out / VOCAB_FILE}")


def quality_stage(params_path: str, task: str, data_dir: Path, out: Path) -> None:
    """How often the gold programs themselves succeed, per split (MathQA's noise; AlgoLisp's cleaned set)."""
    from tprepro.data.shards import iter_rows
    from tprepro.tracking.run import Run

    params = load_params(params_path, models=False)  # builds no model
    spec = get_task(task)
    settings = _task_settings(params, task, params_path)
    report = {}
    for split in (TRAIN, TEST):
        rows = list(iter_rows(open_dataset(data_dir / split, schema=spec.schema), spec.schema.names))
        report[split] = {"label": spec.split_label(settings["data"], split), **spec.quality(rows, settings)}
        print(f"{split} ({report[split]['label']}): {json.dumps(report[split], sort_keys=True)}")
    atomic_write_text(out, json.dumps(report, indent=2, sort_keys=True) + "\n")
    run = Run(mlflow_experiment(params, "n2f"), f"{task}/quality", tags={"stage": "n2f_quality", "task": task})
    run.log_metrics({f"{split}.{key}": value for split, entry in report.items()
                     for key, value in entry.items() if isinstance(value, (int, float))})
    run.log_artifact(out, "results")
    run.finish()


def train_stage(params_path: str, task: str, name: str, seed: int, train_dir: Path, vocab_path: Path, out: Path,
                checkpoints: Path) -> dict:
    from tprepro.experiments.n2f.tuple_vocab import TupleVocab
    from tprepro.training import train_model

    params = load_params(params_path)
    _task_settings(params, task, params_path)
    require_model(params_path, peek(params["n2f"], "models"), name, "n2f.models")
    task_model(params, task, name, params_path)  # refused before any data is opened
    train = open_dataset(train_dir, schema=get_task(task).schema)
    return train_model(training_run(params, task, name, seed, {"train": train}, checkpoints, out,
                                    TupleVocab.load(vocab_path), source=params_path))


def training_run(params: dict, task: str, name: str, seed: int, datasets: Mapping[str, Dataset], checkpoints: Path,
                 out: Path | None, codec, source: str = "params") -> TrainingRun:
    """One (task, model, seed) as this experiment trains it, in its train stage and in the benchmarks: the model of
    n2f.<task>.models (refused, naming `source`, if its tuples do not fit the task's), `train:` under `n2f.train:`
    and `n2f.<task>.train:`, on `datasets` with the task's tuple vocabulary `codec`."""
    from tprepro.training import TrainingRun

    config = TrainConfig.from_params({"train": n2f_train(params, task)})
    return TrainingRun(name, seed, task_model(params, task, name, source), config, dict(datasets), None, out,
                       checkpoints, mlflow_experiment(params, "n2f"),
                       data_settings=for_the_record(params["n2f"][task]["data"]), run_prefix=f"{task}/", codec=codec)


def task_model(params: dict, task: str, name: str, source: str):
    """The architecture of n2f.<task>.models.<name>; refused, naming `source` and the key, if its tuples do not
    have the task's arity."""
    spec = get_task(task)
    model = model_config(params, name, f"n2f.{task}.models")
    if model.family.tuple_arity != spec.arity:
        raise TpreproError(f"{source}: n2f.{task}.models.{name}.tuple_arity: {task} tuples have "
                           f"{spec.arity} arguments, the model {model.family.tuple_arity}")
    return model


def predict_programs(model, vocab, questions: list[str], batch_size: int, max_tuples: int) -> list:
    """Greedy programs for `questions`, decoded in length-sorted batches."""
    import torch

    device = next(model.parameters()).device
    order = sorted(range(len(questions)), key=lambda i: len(questions[i].split()))
    programs: list = [None] * len(questions)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = vocab.encode_sources([questions[i] for i in chunk]).to(device)  # [B, S]
            decoded = model.greedy_decode(src, max_tuples)  # [B, T, 1 + K]
            for i, ids in zip(chunk, decoded.cpu()):
                programs[i] = vocab.decode_program(ids)
    return programs


def answer_problems(model, codec, model_dir: Path, questions: list[str], batch_size: int,
                    max_length: int) -> list[dict]:
    """`tprepro predict` for an N2F model: the greedy program per problem (at most `max_length`
    tuples) and, for MathQA models, its value on the problem's numbers (the faithful executor)."""
    from tprepro.experiments.n2f.mathqa.executor import execute
    from tprepro.experiments.n2f.mathqa.numbers import extract_numbers
    from tprepro.experiments.n2f.tuples import format_program

    try:
        run_name = read_train_metrics(model_dir).get("name", "")  # "<task>/<model>-s<seed>"
    except TpreproError:  # a model copied without its train_metrics.json: programs only
        run_name = ""
    records = []
    for question, program in zip(questions, predict_programs(model, codec, questions, batch_size, max_length)):
        record = {"question": question, "program": format_program(program)}
        if run_name.startswith("mathqa/"):
            outcome = execute(list(program), extract_numbers(question))
            record["value"] = outcome.value if outcome.value is not None else f"fails: {outcome.failure}"
        records.append(record)
    return records


def evaluate_stage(params_path: str, task: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """Greedy programs for the test split, scored the task's way; one CSV row per (test set, metric)."""
    from tprepro.data.shards import iter_rows

    params = load_params(params_path)
    spec = get_task(task)
    settings = _task_settings(params, task, params_path)
    evaluation = params["n2f"]["evaluate"]
    rows = list(iter_rows(open_dataset(test_dir, schema=spec.schema), spec.schema.names))

    def score_programs(model, vocab, summary: dict) -> list[dict]:
        predictions = predict_programs(model, vocab, [r["question"] for r in rows], evaluation["batch_size"],
                                       evaluation["max_tuples"])
        return spec.score(rows, predictions, settings, spec.split_label(settings["data"], "test"))

    evaluate_trained(model_dir, TRAIN_DEVICE.values(params, task=task)["device"], mlflow_experiment(params, "n2f"), out,
                     score_programs, str)  # a metric per N2F measure


def tables_stage(params_path: str, task: str, eval_dir: Path, models_dir: Path, out: Mapping[str, Path]) -> None:
    """The paper's table of `task` (MathQA: Table 1, AlgoLisp: Table 2), one row per model, written to
    the paths of `out` (table_csv, table_md, metrics) and the DVC plot's data (plot: each measure per model)."""
    from tprepro.report.plots import write_bars
    from tprepro.report.tables import module_table, read_eval

    params = load_params(params_path)
    spec = get_task(task)
    settings = _task_settings(params, task, params_path)
    names = params["n2f"]["models"]
    runs = {f"{name}-s{seed}": (name, seed) for name in names for seed in params["n2f"]["seeds"]}
    evals = read_eval([eval_dir / f"{run}.csv" for run in runs])
    table = spec.table(evals, training_summaries(models_dir, runs), names, settings["data"])
    train = TRAIN_BUDGET.values(params, task=task)
    budget = f"{train['steps']} steps of batch {train['batch_size']}"
    markdown = spec.markdown(table, settings["data"], published_rows(params, names, task, f"n2f.{task}.models"),
                             budget)
    headline = spec.headline(settings["data"])  # the task's first column: execution accuracy or Acc
    publish_table(mlflow_experiment(params, "n2f"), f"{task}/tables", {"stage": "n2f_tables", "task": task}, table,
                  markdown, out, (task, {headline: headline}),
                  {out["plot"]: lambda path: write_bars(module_table(evals), path)},
                  losses=final_losses(models_dir, runs))
    print(markdown)
