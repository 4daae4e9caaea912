"""The TP-N2F experiments' stages as `tprepro` sub-commands (one --task per invocation)."""

from __future__ import annotations

from pathlib import Path

from tprepro.train.files import MODEL_FILE, TRAIN_METRICS
from tprepro.data.codecs import CodecKind
from tprepro.experiments.n2f.settings import TRAIN_BUDGET, TRAIN_DEVICE, TRAIN_SETTINGS, check_n2f, data_work, evaluate_work, train_work
from tprepro.experiments import (PIPELINE, COMMON, EVALUATION, INTERPRETING, MODEL_CODE, PUBLISHING, TRAINING, Digested, DvcStage,
                                 Experiment, Option, Reported, Stage, model_bars, options, table_arguments, table_files,
                                 table_outputs, test_arguments, train_arguments, trained)
from tprepro.experiments.n2f import TASKS, VOCAB_FILE


TASK = Option("a task listed in n2f.tasks", choices=TASKS)


def _data(args) -> None:
    from tprepro.experiments.n2f.stages import data_stage

    data_stage(args.params, args.task, Path(args.out))


def _quality(args) -> None:
    from tprepro.experiments.n2f.stages import quality_stage

    quality_stage(args.params, args.task, Path(args.data), Path(args.out))


def _train(args) -> None:
    from tprepro.experiments.n2f.stages import train_stage

    train_stage(args.params, args.task, args.model, args.seed, Path(args.train), Path(args.vocab), Path(args.out),
                Path(args.checkpoints))


def _train_processes(args) -> int:
    from tprepro.params import load_params
    from tprepro.experiments.n2f.settings import n2f_train

    return n2f_train(load_params(args.params), args.task)["processes"]


def _evaluate(args) -> None:
    from tprepro.experiments.n2f.stages import evaluate_stage

    evaluate_stage(args.params, args.task, Path(args.model_dir), Path(args.test), Path(args.out))


def _tables(args) -> None:
    from tprepro.experiments.n2f.stages import tables_stage

    tables_stage(args.params, args.task, Path(args.eval_dir), Path(args.models_dir), table_outputs(args, "plot"))


def _interpret(args) -> None:
    from tprepro.experiments.n2f.interpret import n2f_stage

    n2f_stage(args.params, args.task, Path(args.model_dir), Path(args.test), Path(args.out))


CODEC = CodecKind("tprepro.experiments.n2f.tuple_vocab:TupleVocab",
                  answer="tprepro.experiments.n2f.stages:answer_problems")
# dvc.yaml's paths: ${item.task} ranges over EACH_TASK, a run's model and seed over RUNS.
EACH_TASK = {"task": "${n2f.tasks}"}
RUNS = {**EACH_TASK, "model": "${n2f.models}", "seed": "${n2f.seeds}"}
RUN = "${item.model}-s${item.seed}"
UNBOUND = "${n2f.interpret.unbinding.model}-s${n2f.seeds[0]}"  # the run whose unbinding interpret-n2f clusters
DATA = "data/n2f/${item.task}"
MODELS = "n2f/models/${item.task}"
EVALS = "n2f/eval/${item.task}"
QUALITY = "results/n2f/${item.task}_quality.json"
TABLE = "results/tables/${item.task}"
METRICS = "results/${item.task}_metrics.json"
BARS_PLOT = "results/plots/${item.task}.csv"

# What importing the tasks brings (tuples.py: the reserved tuple ids; tuple_vocab.py: batching;
# tasks.py: report/published.py; stages.py: pipeline.py), beside the experiment's own package.
TASK_CODE = ("experiments/n2f", "data/shards.py", "data/tuple_ids.py", "data/batching.py", "report", *PIPELINE)
EXPERIMENT = Experiment(
    name="n2f",
    title="Chen et al. 2020: TP-N2F and its baselines on MathQA (Table 1) and AlgoLisp (Table 2)",
    stages=(
        Stage("n2f-data", "load or generate an N2F task's train/ and test/ sets and vocabularies",
              options(task=TASK, out="directory for train/, test/ and vocab.json"), _data,
              code=(*COMMON, *TASK_CODE),
              params=("n2f.{task}.data", "vocab"),
              family="data", work=data_work,
              dvc=(DvcStage(f"tprepro n2f-data --task ${{item.task}} --out {DATA}", matrix=EACH_TASK,
                            outs=(f"{DATA}/train", f"{DATA}/test", Digested(f"{DATA}/{VOCAB_FILE}"))),)),
        Stage("n2f-quality", "how often the gold programs succeed, per split",
              options(task=TASK, data="the task's data directory (train/ and test/)", out="JSON report"),
              _quality,
              code=(*COMMON, *TASK_CODE, "tracking", "invocation.py"),
              params=("n2f.{task}.data", "n2f.{task}.evaluate"),
              family="tables",
              dvc=(DvcStage(f"tprepro n2f-quality --task ${{item.task}} --data {DATA} --out {QUALITY}",
                            matrix=EACH_TASK, deps=(f"{DATA}/train", f"{DATA}/test"), results=(QUALITY,)),)),
        Stage("n2f-train", "train one N2F model (resumes from its last checkpoint)",
              train_arguments("n2f.models", "n2f.seeds", task=TASK), _train,
              processes=_train_processes, code=(*TRAINING, *TASK_CODE),
              params=("n2f.{task}.models.{model}", TRAIN_SETTINGS),
              family="train", work=train_work,
              dvc=(DvcStage("tprepro n2f-train --task ${item.task} --model ${item.model} --seed ${item.seed} "
                            f"--train {DATA}/train --vocab {DATA}/{VOCAB_FILE} --out {MODELS}/{RUN} "
                            f"--checkpoints n2f/checkpoints/${{item.task}}/{RUN}",
                            matrix=RUNS, deps=(f"{DATA}/train", f"{DATA}/{VOCAB_FILE}"),
                            outs=(f"{MODELS}/{RUN}/{MODEL_FILE}",), results=(f"{MODELS}/{RUN}/{TRAIN_METRICS}",)),)),
        Stage("n2f-evaluate", "greedy programs on the test split, scored the task's way",
              test_arguments("per-metric CSV", task=TASK), _evaluate,
              code=(*EVALUATION, "experiments/n2f"),
              params=("n2f.evaluate", "n2f.{task}.evaluate", "n2f.{task}.data", TRAIN_DEVICE),
              family="evaluate", work=evaluate_work,
              dvc=(DvcStage(f"tprepro n2f-evaluate --task ${{item.task}} --model-dir {MODELS}/{RUN} "
                            f"--test {DATA}/test --out {EVALS}/{RUN}.csv",
                            matrix=RUNS,
                            deps=(*trained(f"{MODELS}/{RUN}"), f"{DATA}/test"), results=(Digested(f"{EVALS}/{RUN}.csv"),)),)),
        Stage("n2f-tables", "the task's table (MathQA: Table 1, AlgoLisp: Table 2)",
              table_arguments(task=TASK, plot="each measure per model and split, the DVC plot's data (CSV)"),
              _tables, code=(*PUBLISHING, *MODEL_CODE, *TASK_CODE),
              params=("n2f.seeds", TRAIN_BUDGET, "n2f.models", "n2f.{task}.models", "n2f.{task}.data"),
              family="tables",
              dvc=(DvcStage(f"tprepro n2f-tables --task ${{item.task}} --eval-dir {EVALS} --models-dir {MODELS} "
                            f"--table {TABLE} "
                            f"--metrics {METRICS} --plot {BARS_PLOT}",
                            matrix=EACH_TASK, deps=(EVALS, MODELS, QUALITY),
                            results=table_files(TABLE, "n2f"), metrics=(METRICS,),
                            plots=(model_bars(BARS_PLOT, "measure", "score",
                                              "TP-N2F ${item.task}: each measure on the test split, every model "
                                              "(pooled over seeds)"),)),)),
        Stage("interpret-n2f", "cluster the TP-N2F decoder's relation unbinding vectors",
              options("model_dir", "test", "out", task=TASK), _interpret,
              code=(*INTERPRETING, *TASK_CODE),
              params=("interpret.seed", "n2f.interpret.unbinding", "n2f.evaluate.batch_size"),
              family="tables",
              dvc=(DvcStage(f"tprepro interpret-n2f --task ${{item.task}} --model-dir {MODELS}/{UNBOUND} "
                            f"--test {DATA}/test --out n2f/interpret/${{item.task}}",
                            matrix=EACH_TASK,
                            deps=(*trained(f"{MODELS}/{UNBOUND}"), f"{EVALS}/{UNBOUND}.csv", f"{DATA}/test"),
                            results=(Reported("n2f/interpret/${item.task}", "interpret_n2f", "Interpretation"),)),)),
    ),
    models=lambda params: {f"n2f.{task}.models": list(params["n2f"]["models"]) for task in params["n2f"]["tasks"]},
    codecs=(CODEC,),
    check=check_n2f,
    example_items={"item.task": "algolisp", "item.model": "tp_n2f", "item.seed": "1",
                   "n2f.interpret.unbinding.model": "tp_n2f", "n2f.seeds[0]": "1"},
    report_category="TP-N2F",
)
