"""Stages of the summarization experiment (Jiang et al. 2021, the paper's main table).

corpus -> data (per dataset: shards + subword model) -> train (per dataset and model)
-> evaluate (beam search, ROUGE) -> tables. Settings: params.yaml `summarization:`.
Training runs through the same core as every experiment (training.train_model), with
the sentencepiece codec.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tprepro.params import TrainConfig, load_params
from tprepro.params.reads import for_the_record, peek
from tprepro.data.shards import Dataset, iter_rows, open_dataset
from tprepro.errors import TpreproError
from tprepro.evaluate.files import role_sharpness_path
from tprepro.experiments import mlflow_experiment
from tprepro.io import atomic_directory
from tprepro.pipeline import (MODEL_FILE, evaluate_trained, model_config, publish_table, require_model,
                              write_role_sharpness)
from tprepro.experiments.summarization import SCHEMA, SPLITS, TEST, TRAIN, documents_path
from tprepro.experiments.summarization.settings import TRAIN_DEVICE, release_path, summarization_train

if TYPE_CHECKING:  # the training module is imported by the train stage alone (its declared code)
    from tprepro.experiments.summarization.table import RunEvaluation
    from tprepro.training import TrainingRun

MODELS = "summarization.models"
SUBWORD_MODEL = "spm.model"
# MLflow run names, as in every experiment's MLflow experiment: <dataset>/<model>-s<seed>, tables


def _dataset_settings(params: dict, dataset: str, params_path: str) -> dict:
    if dataset not in params["summarization"]["datasets"]:
        raise TpreproError(f"{params_path}: summarization.datasets: no dataset {dataset!r}")
    return params["summarization"]["datasets"][dataset]


def corpus_stage(params_path: str, out: Path) -> None:
    """The CI corpus (standard-library docstrings) in every release format under `out`."""
    from collections import Counter

    from tprepro.experiments.summarization.corpus import release_of, stdlib_examples, write_releases

    settings = load_params(params_path, models=False)["summarization"]["corpus"]
    fractions = {"validation": settings["validation_fraction"], "test": settings["test_fraction"]}
    examples = stdlib_examples(settings["max_examples"], fractions)
    shares = Counter(release_of(e.id) for e in examples)
    for name, directory in write_releases(examples, out).items():
        print(f"{name}: {shares[name.removesuffix('_stories')]} of {len(examples)} docstrings -> {directory}")


def data_stage(params_path: str, dataset: str, corpus_dir: Path, out: Path) -> None:
    """`out/{train,validation,test}` (parquet shards) and `out/spm.model` (trained on the train split)."""
    from tprepro.experiments.summarization.loaders import load_release, write_dataset
    from tprepro.experiments.summarization.tokenizer import train_subwords

    params = load_params(params_path, models=False)  # builds no model
    section = params["summarization"]
    _dataset_settings(params, dataset, params_path)
    settings = {**section["datasets"][dataset], "path": str(release_path(params, dataset, corpus_dir))}
    fractions = {"validation": section["corpus"]["validation_fraction"], "test": section["corpus"]["test_fraction"]}
    splits = load_release(dataset, settings, fractions)
    for split in (TRAIN, TEST):
        if not splits[split]:
            raise TpreproError(f"{settings['path']}: the {split} split of {dataset} has no examples")
    data = section["data"]
    with atomic_directory(out) as tmp:
        for split in SPLITS:
            write_dataset(splits[split], tmp / split, data["rows_per_shard"], dataset=dataset, split=split,
                          source=settings["path"], format=settings["format"])
            print(f"{dataset} {split}: {len(splits[split])} examples")
        texts = [text for row in splits[TRAIN] for text in (row["document"], row["summary"])]
        train_subwords(texts, data["vocab_size"], tmp / SUBWORD_MODEL, seed=data["seed"])
    print(f"{dataset}: shards and subword model -> {out}")


def load_codec(params: dict, data_dir: Path):
    from tprepro.experiments.summarization.tokenizer import SubwordCodec

    data = params["summarization"]["data"]
    return SubwordCodec.load(data_dir / SUBWORD_MODEL, data["max_source_tokens"], data["max_target_tokens"])


def train_stage(params_path: str, dataset: str, name: str, seed: int, data_dir: Path, out: Path,
                checkpoints: Path) -> dict:
    from tprepro.training import train_model

    params = load_params(params_path)
    _dataset_settings(params, dataset, params_path)
    require_model(params_path, peek(params["summarization"], "models"), name, MODELS)
    train = open_dataset(data_dir / TRAIN, schema=SCHEMA)
    return train_model(training_run(params, dataset, name, seed, {"train": train}, checkpoints, out, data_dir))


def training_run(params: dict, dataset: str, name: str, seed: int, datasets: Mapping[str, Dataset], checkpoints: Path,
                 out: Path | None, data_dir: Path) -> TrainingRun:
    """One (dataset, model, seed) as this experiment trains it, in its train stage and in the benchmarks: the model
    of summarization.models, `train:` under `summarization.train:`, on `datasets` with the subword codec of
    `data_dir` (the dataset's data stage output)."""
    from tprepro.training import TrainingRun

    config = TrainConfig.from_params({"train": summarization_train(params)})
    return TrainingRun(name, seed, model_config(params, name, MODELS), config, dict(datasets), data_dir / SUBWORD_MODEL,
                       out, checkpoints, mlflow_experiment(params, "summarization"),
                       data_settings={**for_the_record(params["summarization"]["data"]), "dataset": dataset},
                       run_prefix=f"{dataset}/", codec=load_codec(params, data_dir))


def answer_documents(model, codec, model_dir: Path, documents: list[str], batch_size: int,
                     max_length: int) -> list[dict]:
    """`tprepro predict` for a summarization model: a beam-searched summary per document
    (beam 4, length penalty 0.6, trigram blocking: the evaluate stage's defaults in params.yaml)."""
    from tprepro.experiments.summarization.decoding import summarize_documents

    summaries = summarize_documents(model, codec, documents, batch_size, max_length, beam_size=4, alpha=0.6,
                                    no_repeat_ngram=3)
    return [{"document": document, "summary": summary} for document, summary in zip(documents, summaries)]


def evaluate_stage(params_path: str, dataset: str, model_dir: Path, data_dir: Path, out: Path) -> None:
    """Beam-searched summaries of the test split scored with ROUGE-1/2/L F1: as evaluation rows in `out`
    (report.tables.EVAL_COLUMNS, module = the ROUGE type, accuracy = the mean F1) and per document beside
    it (documents_path(out): table.DOCUMENT_COLUMNS); discrete-role models add their role sharpness
    (`<out stem>.roles.json`). Metrics go to the training run as `<dataset>.<rouge>` (x 100)."""
    import pandas as pd

    from tprepro.experiments.summarization.decoding import summarize_documents
    from tprepro.experiments.summarization.scoring import rouge_f1
    from tprepro.experiments.summarization.table import DOCUMENT_COLUMNS
    from tprepro.experiments.summarization.tokenizer import SubwordCodec
    from tprepro.report.tables import write_digested_csv

    params = load_params(params_path)
    section = params["summarization"]
    _dataset_settings(params, dataset, params_path)
    settings = section["evaluate"]
    rows = list(iter_rows(open_dataset(data_dir / TEST, schema=SCHEMA), ("document", "summary", "id")))
    rows = rows[: settings["max_documents"] or None]
    documents_out = documents_path(out)

    def score(model, codec, summary: dict) -> list[dict]:
        if not isinstance(codec, SubwordCodec):
            raise TpreproError(f"{model_dir / MODEL_FILE}: not a summarization model (no sentencepiece codec)")
        started = time.perf_counter()
        predictions = summarize_documents(model, codec, [r["document"] for r in rows], settings["batch_size"],
                                          settings["max_summary_tokens"], settings["beam_size"],
                                          settings["length_penalty"], settings["no_repeat_ngram"])
        seconds = time.perf_counter() - started
        print(f"{dataset}: {len(rows)} documents beam-searched in {seconds:.1f} s")
        f1 = rouge_f1(predictions, [r["summary"] for r in rows])  # {rouge type: [documents]}
        documents = pd.DataFrame({"id": [r["id"] for r in rows], **f1, "reference": [r["summary"] for r in rows],
                                  "prediction": predictions}, columns=list(DOCUMENT_COLUMNS))
        write_digested_csv(documents, documents_out, float_format=None)  # F1 in full: the table's means are exact
        return [{"module": name, "split": TEST, "n": len(rows), "correct": float(values.sum()),
                 "accuracy": float(values.mean()) if len(values) else float("nan")} for name, values in f1.items()]

    def documents_and_roles(model, codec, run, summary: dict) -> None:
        run.log_artifact(documents_out, "evaluation")
        write_role_sharpness(model, codec, [(r["document"], r["summary"]) for r in rows], settings["batch_size"],
                             out, run, summary)

    evaluate_trained(model_dir, TRAIN_DEVICE.values(params)["device"], mlflow_experiment(params, "summarization"),
                     out, score, extra=documents_and_roles,
                     metrics=lambda results: {f"{dataset}.{r['module']}": 100 * r["accuracy"] for r in results})


def read_run_evaluation(evaluation: Path, model: str, dataset: str, seed: int) -> RunEvaluation:
    """A run's per-document scores and (discrete-role models) role sharpness, the files the evaluate
    stage writes beside its evaluation CSV `evaluation`."""
    from tprepro.experiments.summarization.scoring import ROUGE_TYPES
    from tprepro.experiments.summarization.table import DOCUMENT_COLUMNS, RunEvaluation
    from tprepro.io import read_checked_csv
    from tprepro.report.tables import checked_numbers

    path = documents_path(evaluation)
    documents = read_checked_csv(path, DOCUMENT_COLUMNS, "per-document ROUGE file", digested=True,
                                 keep_default_na=False, dtype={"id": str, "reference": str, "prediction": str})
    for name in ROUGE_TYPES:  # F1 of each document: a finite number in [0, 1]
        documents[name] = checked_numbers(documents, path, name, low=0, high=1)
    roles_path = role_sharpness_path(evaluation)
    try:
        sharpness = json.loads(roles_path.read_text(encoding="utf-8"))["role_sharpness"]
    except FileNotFoundError as exc:
        raise TpreproError(f"{roles_path}: missing (every evaluation writes it): rerun the evaluation") from exc
    except (json.JSONDecodeError, KeyError) as exc:
        raise TpreproError(f"{roles_path}: not a role-sharpness file ({exc})") from exc
    return RunEvaluation(model, dataset, seed, documents, sharpness)


def tables_stage(params_path: str, eval_dir: Path, out: Mapping[str, Path]) -> None:
    """The paper's main table: ROUGE-1/2/L per dataset (columns) and model (rows) over the seeds,
    written to the paths of `out` (table_csv, table_md, table_html, metrics), and the DVC plot's data
    (plot: ROUGE F1 per model, a panel per dataset)."""
    from tprepro.report.plots import write_bars
    from tprepro.experiments.summarization.table import read_published, summary_markdown, summary_table

    params = load_params(params_path, models=False)  # builds no model
    section = params["summarization"]
    evals = [read_run_evaluation(eval_dir / dataset / f"{name}-s{seed}.csv", name, dataset, seed)
             for dataset in section["datasets"] for name in section["models"] for seed in section["seeds"]]
    published = read_published(section["report"]["published"])
    table = summary_table(evals, list(section["models"]), list(section["datasets"]), section["report"]["bootstrap"])
    markdown = summary_markdown(table, evals, published, section["report"]["samples"])
    publish_table(mlflow_experiment(params, "summarization"), "tables",
                  {"stage": "summarization_tables"}, table, markdown, out,
                  ("summarization", {f"{dataset}.rougeL": f"{dataset}.rougeL" for dataset in section["datasets"]}),
                  {out["plot"]: lambda path: write_bars(rouge_by_dataset(eval_dir, section), path)})
    print(markdown)


def rouge_by_dataset(eval_dir: Path, section: dict):
    """Each model's mean ROUGE F1 per type (the `module` column) and dataset (`split`), over seeds and documents."""
    import pandas as pd

    from tprepro.report.tables import module_table, read_eval

    return module_table(pd.concat([read_eval([eval_dir / dataset / f"{name}-s{seed}.csv" for name in section["models"]
                                              for seed in section["seeds"]]).assign(split=dataset)
                                   for dataset in section["datasets"]], ignore_index=True))
