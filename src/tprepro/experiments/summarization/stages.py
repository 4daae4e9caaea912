"""Stages of the summarization experiment (Jiang et al. 2021, the paper's main table).

corpus -> data (per dataset: shards + subword model) -> train (per dataset and model)
-> evaluate (beam search, ROUGE) -> tables. Settings: params.yaml `summarization:`.
Training runs through the same core as every experiment (pipeline.train_model), with
the sentencepiece codec.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Mapping

from tprepro.params import TrainConfig, load_params
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.errors import TpreproError
from tprepro.experiments import mlflow_experiment
from tprepro.io import atomic_directory, atomic_write_text
from tprepro.pipeline import (MODEL_FILE, TrainingRun, model_config, publish_table, read_train_metrics,
                              require_model, train_model, training_run)
from tprepro.experiments.summarization import SPLITS, TEST, TRAIN
from tprepro.experiments.summarization.settings import release_path, summarization_train

MODELS = "summarization.models"
SUBWORD_MODEL = "spm.model"
RUN_PREFIX = "summarization/"  # MLflow runs: summarization/<dataset>/<model>-s<seed>, summarization/tables


def _dataset_settings(params: dict, dataset: str, params_path: str) -> dict:
    if dataset not in params["summarization"]["datasets"]:
        raise TpreproError(f"{params_path}: summarization.datasets: no dataset {dataset!r}")
    return params["summarization"]["datasets"][dataset]


def corpus_stage(params_path: str, out: Path) -> None:
    """The CI corpus (standard-library docstrings) in every release format under `out`."""
    from collections import Counter

    from tprepro.experiments.summarization.corpus import release_of, stdlib_examples, write_releases

    settings = load_params(params_path)["summarization"]["corpus"]
    fractions = {"validation": settings["validation_fraction"], "test": settings["test_fraction"]}
    examples = stdlib_examples(settings["max_examples"], fractions)
    shares = Counter(release_of(e.id) for e in examples)
    for name, directory in write_releases(examples, out).items():
        print(f"{name}: {shares[name.removesuffix('_stories')]} of {len(examples)} docstrings -> {directory}")


def data_stage(params_path: str, dataset: str, corpus_dir: Path, out: Path) -> None:
    """`out/{train,validation,test}` (parquet shards) and `out/spm.model` (trained on the train split)."""
    from tprepro.experiments.summarization.loaders import load_release, write_dataset
    from tprepro.experiments.summarization.tokenizer import train_subwords

    params = load_params(params_path)
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
        train_subwords(texts, data["vocab_size"], tmp / SUBWORD_MODEL, seed=section["seed"])
    print(f"{dataset}: shards and subword model -> {out}")


def load_codec(params: dict, data_dir: Path):
    from tprepro.experiments.summarization.tokenizer import SubwordCodec

    data = params["summarization"]["data"]
    return SubwordCodec.load(data_dir / SUBWORD_MODEL, data["max_source_tokens"], data["max_target_tokens"])


def train_stage(params_path: str, dataset: str, name: str, data_dir: Path, out: Path, checkpoints: Path) -> dict:
    params = load_params(params_path)
    section = params["summarization"]
    _dataset_settings(params, dataset, params_path)
    require_model(params_path, section["models"], name, MODELS)
    config = TrainConfig.from_params({"train": summarization_train(params)})
    return train_model(TrainingRun(name, section["seed"], model_config(params, name, MODELS), config,
                                   {"train": open_dataset(data_dir / TRAIN)}, data_dir / SUBWORD_MODEL, out,
                                   checkpoints, mlflow_experiment(params, "summarization"),
                                   data_settings={**section["data"], "dataset": dataset},
                                   run_prefix=f"{RUN_PREFIX}{dataset}/", codec=load_codec(params, data_dir)))


def load_summarizer(path: Path, device):
    """The exported model and its subword codec."""
    from tprepro.evaluate.evaluate import load_trained
    from tprepro.experiments.summarization.tokenizer import SubwordCodec

    model, codec, _ = load_trained(path, device)
    if not isinstance(codec, SubwordCodec):
        raise TpreproError(f"{path}: not a summarization model (no sentencepiece codec)")
    return model, codec


def answer_documents(model, codec, model_dir: Path, documents: list[str], batch_size: int,
                     max_length: int) -> list[dict]:
    """`tprepro predict` for a summarization model: a beam-searched summary per document
    (beam 4, length penalty 0.6, trigram blocking: the evaluate stage's defaults in params.yaml)."""
    from tprepro.experiments.summarization.decoding import summarize_documents

    summaries = summarize_documents(model, codec, documents, batch_size, max_length, beam_size=4, alpha=0.6,
                                    no_repeat_ngram=3)
    return [{"document": document, "summary": summary} for document, summary in zip(documents, summaries)]


def evaluate_stage(params_path: str, dataset: str, model_dir: Path, data_dir: Path, out: Path) -> None:
    """Beam-searched summaries of the test split, ROUGE-1/2/L F1 with bootstrap intervals, sample
    summaries and (TPT-d) role sharpness, in one JSON file; metrics logged to the training run."""
    from tprepro.evaluate.roles import has_discrete_roles, role_sharpness
    from tprepro.experiments.summarization.decoding import summarize_documents
    from tprepro.experiments.summarization.scoring import ROUGE_TYPES, score_summaries
    from tprepro.train.trainer import pick_device

    params = load_params(params_path)
    section = params["summarization"]
    _dataset_settings(params, dataset, params_path)
    settings = section["evaluate"]
    summary = read_train_metrics(model_dir)
    model, codec = load_summarizer(model_dir / MODEL_FILE, pick_device(summarization_train(params)["device"]))
    rows = list(iter_rows(open_dataset(data_dir / TEST), ("document", "summary", "id")))
    if settings["max_documents"]:
        rows = rows[: settings["max_documents"]]
    documents = [r["document"] for r in rows]
    started = time.perf_counter()
    predictions = summarize_documents(model, codec, documents, settings["batch_size"],
                                      settings["max_summary_tokens"], settings["beam_size"],
                                      settings["length_penalty"], settings["no_repeat_ngram"])
    seconds = time.perf_counter() - started
    bootstrap = settings["bootstrap"]
    scores = score_summaries(predictions, [r["summary"] for r in rows], bootstrap["confidence"],
                             bootstrap["resamples"], bootstrap["seed"])
    result = {"model": summary["model"], "dataset": dataset, "seed": summary["seed"], "steps": summary["steps"],
              "parameters": summary["parameters"], **scores, "beam_size": settings["beam_size"],
              "decode_seconds": seconds, "documents_per_second": len(rows) / seconds if seconds else None,
              "samples": [{"id": r["id"], "document": r["document"][:300], "reference": r["summary"],
                           "prediction": p} for r, p in list(zip(rows, predictions))[: settings["samples"]]]}
    if has_discrete_roles(model):
        pairs = [(r["document"], r["summary"]) for r in rows]
        result.update(role_sharpness(model, codec, pairs, settings["batch_size"]))
    atomic_write_text(out, json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(" ".join(f"{name} {scores[name]:.2f}" for name in ROUGE_TYPES) + f" (n={scores['n']}) -> {out}")
    metrics = {f"{dataset}.{name}": scores[name] for name in ROUGE_TYPES}
    if "role_sharpness" in result:
        metrics[f"{dataset}.role_sharpness"] = result["role_sharpness"]
    with training_run(mlflow_experiment(params, "summarization"), summary) as run:  # FAILED if a write fails
        run.log_metrics(metrics, step=summary["steps"])
        run.log_artifact(out, "evaluation")
        run.finish()


def tables_stage(params_path: str, eval_dir: Path, out: Mapping[str, Path]) -> None:
    """The paper's main table: ROUGE-1/2/L per dataset (columns) and model (rows), written to the paths
    of `out` (table_csv, table_md, metrics)."""
    from tprepro.experiments.summarization.table import read_published, summary_markdown, summary_table

    params = load_params(params_path)
    section = params["summarization"]
    evals = []
    for dataset in section["datasets"]:
        for name in section["models"]:
            path = eval_dir / dataset / f"{name}.json"
            try:
                evals.append(json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError as exc:
                raise TpreproError(f"{path}: missing (run the summarization evaluate stage)") from exc
            except json.JSONDecodeError as exc:
                raise TpreproError(f"{path}: not valid JSON ({exc})") from exc
    published = read_published(section["report"]["published"])
    table = summary_table(evals, list(section["models"]), list(section["datasets"]))
    markdown = summary_markdown(table, evals, published, section["report"]["samples"])
    publish_table(mlflow_experiment(params, "summarization"), f"{RUN_PREFIX}tables",
                  {"stage": "summarization_tables"}, table, markdown, out,
                  lambda row: {dataset: row[f"{dataset}.rougeL"] for dataset in section["datasets"]})
    print(markdown)
