"""The summarization experiment's stages as `tprepro` sub-commands; imports stay lazy."""

from __future__ import annotations

from pathlib import Path

from tprepro.train.files import MODEL_FILE, TRAIN_METRICS
from tprepro.data.codecs import CodecKind
from tprepro.experiments.summarization import DOCUMENTS_SUFFIX
from tprepro.experiments.summarization.settings import (TRAIN_DEVICE, TRAIN_SETTINGS, check_summarization, data_work,
                                                        evaluate_work, train_work)
from tprepro.experiments import (PIPELINE, COMMON, EVALUATION, PUBLISHING, TRAINING, Digested, DvcStage, Experiment, Option, Stage,
                                 model_bars, options, plot_data, role_sharpness_file, table_arguments, table_files, table_outputs, trained)


def _corpus(args) -> None:
    from tprepro.experiments.summarization.stages import corpus_stage

    corpus_stage(args.params, Path(args.out))


def _data(args) -> None:
    from tprepro.experiments.summarization.stages import data_stage

    data_stage(args.params, args.dataset, Path(args.corpus), Path(args.out))


def _train(args) -> None:
    from tprepro.experiments.summarization.stages import train_stage

    train_stage(args.params, args.dataset, args.model, args.seed, Path(args.data), Path(args.out),
                Path(args.checkpoints))


def _evaluate(args) -> None:
    from tprepro.experiments.summarization.stages import evaluate_stage

    evaluate_stage(args.params, args.dataset, Path(args.model_dir), Path(args.data), Path(args.out))


def _tables(args) -> None:
    from tprepro.experiments.summarization.stages import tables_stage

    tables_stage(args.params, Path(args.eval_dir), table_outputs(args, "plot"))


DATASET = Option("a name in summarization.datasets")
DATA_DIR = Option("the dataset's data directory")


S = "experiments/summarization"
DATA_CODE = (f"{S}/__init__.py", f"{S}/corpus.py", f"{S}/loaders.py", f"{S}/tokenizer.py", f"{S}/settings.py",
             f"{S}/stages.py", "data/shards.py", "data/batching.py", *PIPELINE)
CODEC = CodecKind("tprepro.experiments.summarization.tokenizer:SubwordCodec",
                  answer="tprepro.experiments.summarization.stages:answer_documents")
# dvc.yaml's paths: a run's dataset, model and seed range over RUNS.
RUNS = {"dataset": "${summarization.datasets}", "model": "${summarization.models}", "seed": "${summarization.seeds}"}
RUN = "${item.dataset}/${item.model}-s${item.seed}"
CORPUS = "data/summarization/corpus"
DATA = "data/summarization/${item.dataset}"
MODEL = f"summarization/models/{RUN}"
CHECKPOINTS = f"summarization/checkpoints/{RUN}"
SCORES = Digested(f"summarization/eval/{RUN}.csv", beside=(role_sharpness_file(f"summarization/eval/{RUN}.csv"),))
DOCUMENTS = Digested(f"summarization/eval/{RUN}{DOCUMENTS_SUFFIX}")
TABLE = "results/tables/summarization"
METRICS = "results/summarization_metrics.json"
BARS_PLOT = "results/plots/summarization.csv"

EXPERIMENT = Experiment(
    name="summarization",
    title="Jiang et al.: TPT-d vs TPT-c vs Transformer on XSum, CNN/DM, Wikihow and arXiv (ROUGE)",
    stages=(
        Stage("summarization-corpus", "write the CI corpus (stdlib docstrings) in every release format",
              options(out="directory for the release files"), _corpus,
              code=(*COMMON, f"{S}/__init__.py", f"{S}/corpus.py", f"{S}/stages.py", *PIPELINE),
              params=("summarization.corpus",),
              family="data",
              dvc=(DvcStage(f"tprepro summarization-corpus --out {CORPUS}", outs=(CORPUS,)),)),
        Stage("summarization-data", "load one dataset's release into shards and train its subword model",
              options(dataset=DATASET, corpus="the CI corpus directory (used when the path is null)",
                      out="directory for train/, validation/, test/ and spm.model"),
              _data, code=(*COMMON, *DATA_CODE),
              params=("summarization.datasets.{dataset}", "summarization.corpus.validation_fraction",
                      "summarization.corpus.test_fraction", "summarization.data.rows_per_shard", "summarization.data.seed",
                      "summarization.data.vocab_size"),
              family="data", work=data_work,
              dvc=(DvcStage(f"tprepro summarization-data --dataset ${{key}} --corpus {CORPUS} "
                            "--out data/summarization/${key}",
                            foreach="${summarization.datasets}", foreach_key=True, foreach_as="dataset",
                            deps=(CORPUS,), outs=("data/summarization/${key}",)),)),
        Stage("summarization-train", "train one summarization model (resumes from its checkpoint)",
              options("checkpoints", dataset=DATASET, model="a name in summarization.models",
                      seed=Option("training seed (one of summarization.seeds)", type=int), data=DATA_DIR,
                      out=f"directory for {MODEL_FILE} and {TRAIN_METRICS}"),
              _train, code=(*TRAINING, f"{S}/__init__.py", f"{S}/tokenizer.py", f"{S}/decoding.py", f"{S}/settings.py",
                            f"{S}/stages.py"),
              params=("summarization.models.{model}", TRAIN_SETTINGS, "summarization.data.max_source_tokens",
                      "summarization.data.max_target_tokens"),
              family="train", work=train_work,
              dvc=(DvcStage("tprepro summarization-train --dataset ${item.dataset} --model ${item.model} "
                            f"--seed ${{item.seed}} --data {DATA} --out {MODEL} --checkpoints {CHECKPOINTS}",
                            matrix=RUNS, deps=(DATA,),
                            outs=(f"{MODEL}/{MODEL_FILE}",), results=(f"{MODEL}/{TRAIN_METRICS}",)),)),
        Stage("summarization-evaluate", "beam-search the test split and score it with ROUGE",
              options("model_dir", dataset=DATASET, data=DATA_DIR,
                      out=f"evaluation CSV, one row per ROUGE type; beside it <out stem>{DOCUMENTS_SUFFIX} (per "
                          "document: id, ROUGE F1s, reference, prediction) and, for discrete-role models, "
                          "<out stem>.roles.json"),
              _evaluate, code=(*EVALUATION, f"{S}/__init__.py", f"{S}/tokenizer.py", f"{S}/decoding.py",
                               f"{S}/scoring.py", f"{S}/table.py", f"{S}/settings.py", f"{S}/stages.py"),
              params=("summarization.evaluate", TRAIN_DEVICE),
              family="evaluate", work=evaluate_work,
              dvc=(DvcStage("tprepro summarization-evaluate --dataset ${item.dataset} "
                            f"--model-dir {MODEL} --data {DATA} --out {SCORES}",
                            matrix=RUNS, deps=(*trained(MODEL), DATA),
                            results=(SCORES, DOCUMENTS)),)),
        Stage("summarization-tables", "the summarization table and report",
              table_arguments(models=False, evals=f"the evaluations: <dataset>/<run>.csv, <run>{DOCUMENTS_SUFFIX}",
                              plot=plot_data(BARS_PLOT, "ROUGE F1 per model, ROUGE type and dataset")),
              _tables, code=(*PUBLISHING, "evaluate/files.py", f"{S}/__init__.py", f"{S}/scoring.py", f"{S}/table.py", f"{S}/stages.py"),
              params=("summarization.models", "summarization.datasets", "summarization.seeds",
                      "summarization.report"),
              family="tables",
              dvc=(DvcStage("tprepro summarization-tables --eval-dir summarization/eval "
                            f"--table {TABLE} "
                            f"--metrics {METRICS}",
                            deps=("summarization/eval",),
                            results=table_files(TABLE, "summarization"), metrics=(METRICS,),
                            plots=(model_bars(BARS_PLOT, "ROUGE", "ROUGE F1",
                                              "Summarization: ROUGE F1 per dataset, every model (mean over seeds "
                                              "and documents)"),)),)),
    ),
    models=lambda params: {"summarization.models": list(params["summarization"]["models"])},
    codecs=(CODEC,),
    check=check_summarization,
    example_items={"key": "xsum", "item.dataset": "xsum", "item.model": "tpt_d", "item.seed": "1"},
    report_category="Summarization",
)
