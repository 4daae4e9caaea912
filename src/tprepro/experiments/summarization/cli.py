"""The summarization experiment's stages as `tprepro` sub-commands; imports stay lazy."""

from __future__ import annotations

from pathlib import Path

from tprepro.data.codecs import CodecKind
from tprepro.experiments.summarization.settings import check_summarization
from tprepro.experiments import (COMMON, EVALUATION, PUBLISHING, TRAINING, Experiment, Stage, table_arguments,
                                 table_outputs)


def _corpus(args) -> None:
    from tprepro.experiments.summarization.stages import corpus_stage

    corpus_stage(args.params, Path(args.out))


def _data(args) -> None:
    from tprepro.experiments.summarization.stages import data_stage

    data_stage(args.params, args.dataset, Path(args.corpus), Path(args.out))


def _train(args) -> None:
    from tprepro.experiments.summarization.stages import train_stage

    train_stage(args.params, args.dataset, args.model, Path(args.data), Path(args.out), Path(args.checkpoints))


def _evaluate(args) -> None:
    from tprepro.experiments.summarization.stages import evaluate_stage

    evaluate_stage(args.params, args.dataset, Path(args.model_dir), Path(args.data), Path(args.out))


def _tables(args) -> None:
    from tprepro.experiments.summarization.stages import tables_stage

    tables_stage(args.params, Path(args.eval_dir), table_outputs(args))


def _corpus_arguments(p) -> None:
    p.add_argument("--out", required=True, help="directory for the release files")


def _data_arguments(p) -> None:
    p.add_argument("--dataset", required=True, help="a name in summarization.datasets")
    p.add_argument("--corpus", required=True, help="the CI corpus directory (used when the path is null)")
    p.add_argument("--out", required=True, help="directory for train/, validation/, test/ and spm.model")


def _train_arguments(p) -> None:
    p.add_argument("--dataset", required=True, help="a name in summarization.datasets")
    p.add_argument("--model", required=True, help="a name in summarization.models")
    p.add_argument("--data", required=True, help="the dataset's data directory")
    p.add_argument("--out", required=True, help="directory for model.pt and train_metrics.json")
    p.add_argument("--checkpoints", required=True, help="directory for the resumable checkpoint")


def _evaluate_arguments(p) -> None:
    p.add_argument("--dataset", required=True, help="a name in summarization.datasets")
    p.add_argument("--model-dir", required=True, help="a trained model's directory (model.pt)")
    p.add_argument("--data", required=True, help="the dataset's data directory")
    p.add_argument("--out", required=True, help="evaluation JSON")


def _tables_arguments(p) -> None:
    table_arguments(p, models=False, evals="the evaluation JSONs (<dataset>/<model>.json)")


S = "experiments/summarization"
DATA_CODE = (f"{S}/__init__.py", f"{S}/corpus.py", f"{S}/loaders.py", f"{S}/tokenizer.py", f"{S}/settings.py",
             f"{S}/stages.py", "data/shards.py")
CODEC = CodecKind("tprepro.experiments.summarization.tokenizer:SubwordCodec",
                  answer="tprepro.experiments.summarization.stages:answer_documents")
EXPERIMENT = Experiment(
    name="summarization",
    title="Jiang et al.: TPT-d vs TPT-c vs Transformer on XSum, CNN/DM, Wikihow and arXiv (ROUGE)",
    stages=(
        Stage("summarization-corpus", "write the CI corpus (stdlib docstrings) in every release format",
              "tprepro summarization-corpus --out data/summarization/corpus", _corpus_arguments, _corpus,
              code=(*COMMON, f"{S}/__init__.py", f"{S}/corpus.py", f"{S}/stages.py"),
              params=("summarization.corpus",)),
        Stage("summarization-data", "load one dataset's release into shards and train its subword model",
              "tprepro summarization-data --dataset xsum --corpus data/summarization/corpus "
              "--out data/summarization/xsum", _data_arguments, _data, code=(*COMMON, *DATA_CODE),
              params=("summarization.datasets.{dataset}", "summarization.corpus", "summarization.data",
                      "summarization.seed")),
        Stage("summarization-train", "train one summarization model (resumes from its checkpoint)",
              "tprepro summarization-train --dataset xsum --model tpt_d --data data/summarization/xsum "
              "--out summarization/models/xsum/tpt_d --checkpoints summarization/checkpoints/xsum/tpt_d",
              _train_arguments, _train, code=(*TRAINING, f"{S}/tokenizer.py", f"{S}/settings.py", f"{S}/stages.py"),
              params=("summarization.models.{model}", "summarization.train", "summarization.data",
                      "summarization.seed", "train")),
        Stage("summarization-evaluate", "beam-search the test split and score it with ROUGE",
              "tprepro summarization-evaluate --dataset xsum --model-dir summarization/models/xsum/tpt_d "
              "--data data/summarization/xsum --out summarization/eval/xsum/tpt_d.json", _evaluate_arguments,
              _evaluate, code=(*EVALUATION, f"{S}/tokenizer.py", f"{S}/decoding.py", f"{S}/scoring.py",
                               f"{S}/settings.py", f"{S}/stages.py"),
              params=("summarization.evaluate",)),
        Stage("summarization-tables", "the summarization table and report",
              "tprepro summarization-tables --eval-dir summarization/eval --table-csv "
              "results/tables/summarization.csv --table-md results/tables/summarization.md --table-html "
              "results/tables/summarization.html --metrics results/summarization_metrics.json",
              _tables_arguments, _tables,
              code=(*PUBLISHING, f"{S}/table.py", f"{S}/stages.py"),
              params=("summarization.models", "summarization.datasets", "summarization.report")),
    ),
    models=lambda params: {"summarization.models": list(params["summarization"]["models"])},
    codecs=(CODEC,),
    check=check_summarization,
)
