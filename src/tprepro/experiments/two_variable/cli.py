"""The two-variable arithmetic experiment's stages as `tprepro` sub-commands."""

from __future__ import annotations

from pathlib import Path

from tprepro.train.files import CURVE_FILE, MODEL_FILE, TRAIN_METRICS
from tprepro.experiments.two_variable.settings import (TRAIN_BUDGET, TRAIN_DEVICE, TRAIN_SETTINGS, check_two_variable, data_work, evaluate_work,
                                                       train_work)
from tprepro.experiments import (PIPELINE, COMMON, EVALUATION, INTERPRETING, MODEL_CODE, PUBLISHING, SHARED_OPTIONS, TRAINING,
                                 Digested, DvcStage, Experiment, Reported, Stage, accuracy_bars, learning_curve, model_bars,
                                 model_curves, options, plot_data,
                                 table_arguments, table_files, table_outputs, test_arguments, train_arguments,
                                 trained)


def _data(args) -> None:
    from tprepro.experiments.two_variable.stages import data_stage

    data_stage(args.params, Path(args.out), Path(args.vocab))


def _train(args) -> None:
    from tprepro.experiments.two_variable.stages import train_stage

    train_stage(args.params, args.model, args.seed, Path(args.train), Path(args.vocab), Path(args.out),
                Path(args.checkpoints), Path(args.heldout))


def _evaluate(args) -> None:
    from tprepro.experiments.two_variable.stages import evaluate_stage

    evaluate_stage(args.params, Path(args.model_dir), Path(args.test), Path(args.out))


def _tables(args) -> None:
    from tprepro.experiments.two_variable.stages import tables_stage

    tables_stage(args.params, Path(args.eval_dir), Path(args.models_dir), table_outputs(args, "curves", "plot", "curve_plot"))


def _interpret(args) -> None:
    from tprepro.experiments.two_variable.interpret import two_variable_stage

    two_variable_stage(args.params, Path(args.model_dir), Path(args.test), Path(args.out))


# dvc.yaml paths of one run: ${item.model} and ${item.seed} range over RUNS.
RUNS = {"model": "${two_variable.models}", "seed": "${two_variable.seeds}"}
RUN = "${item.model}-s${item.seed}"
MODELS = "two_variable/models"
MODEL = f"{MODELS}/{RUN}"
DATA = "data/two_variable"
# The data stage writes these; the commands read them by default, so they name only what varies by job.
TRAIN, TEST, VOCAB = f"{DATA}/train", f"{DATA}/test", Digested(f"{DATA}/vocab.json")
EVALS, INTERPRETED = "two_variable/eval", "two_variable/interpret"
TABLE = "results/tables/two_variable_types"
METRICS = "results/two_variable_metrics.json"
BARS_PLOT, CURVES_PLOT = "results/plots/two_variable.csv", "results/plots/two_variable_curves.csv"
TITLE = "Two-variable arithmetic"  # the DVC plots' titles start with it

EXPERIMENT = Experiment(
    name="two_variable",
    title="Wangperawong 2018: Transformer, UT and AUT on two-variable arithmetic (Table 3)",
    stages=(
        Stage("two-variable-data", "generate the two-variable arithmetic data (train/ and test/) and its vocabulary",
              options(out="directory for the train/ and test/ datasets", vocab="vocabulary file to write"), _data,
              code=(*COMMON, "experiments/two_variable/data.py", "experiments/two_variable/stages.py",
                    "data/shards.py", "data/vocab.py", "data/batching.py", *PIPELINE),
              params=("two_variable.data", "vocab"),
              family="data", work=data_work,
              dvc=(DvcStage(f"tprepro two-variable-data --out {DATA} --vocab {VOCAB}",
                            outs=(TRAIN, TEST, VOCAB)),)),
        Stage("two-variable-train", "train one model of the two-variable experiment",
              train_arguments("two_variable.models", "two_variable.seeds", train=SHARED_OPTIONS["train"].at(TRAIN),
                              vocab=SHARED_OPTIONS["vocab"].at(VOCAB), heldout=SHARED_OPTIONS["heldout"].at(TEST)),
              _train,
              code=(*TRAINING, "experiments/two_variable/stages.py", "experiments/two_variable/settings.py"),
              params=("two_variable.models.{model}", TRAIN_SETTINGS, "evaluate.max_answer_length"),
              family="train", work=train_work,
              dvc=(DvcStage("tprepro two-variable-train --model ${item.model} --seed ${item.seed} "
                            f"--out {MODEL} --checkpoints two_variable/checkpoints/{RUN}",
                            matrix=RUNS,
                            deps=(TRAIN, VOCAB, TEST),
                            outs=(f"{MODEL}/{MODEL_FILE}",),
                            results=(f"{MODEL}/{TRAIN_METRICS}",),
                            plots=(learning_curve(f"{MODEL}/{CURVE_FILE}", TITLE),)),)),
        Stage("two-variable-evaluate", "test accuracy per expression type",
              test_arguments("per-type CSV", test=SHARED_OPTIONS["test"].at(TEST)), _evaluate,
              code=(*EVALUATION, "experiments/two_variable/stages.py", "experiments/two_variable/data.py",
                    "experiments/two_variable/settings.py"),
              params=("evaluate.batch_size", "evaluate.max_answer_length", TRAIN_DEVICE),
              family="evaluate", work=evaluate_work,
              dvc=(DvcStage(f"tprepro two-variable-evaluate --model-dir {MODEL} --out {EVALS}/{RUN}.csv",
                            matrix=RUNS,
                            deps=(*trained(MODEL), TEST),
                            plots=(accuracy_bars(Digested(f"{EVALS}/{RUN}.csv"), per="expression type", experiment=TITLE),)),)),
        Stage("two-variable-tables", "the per-type table (Wangperawong, Table 3)",
              table_arguments(located={"models_dir": MODELS, "eval_dir": EVALS},
                              curves="the learning-curve figure (PNG)",
                              plot=plot_data(BARS_PLOT, "accuracy per model, expression type and split"),
                              curve_plot=plot_data(CURVES_PLOT, "every run's learning curve")), _tables,
              code=(*PUBLISHING, *MODEL_CODE, "experiments/two_variable/stages.py", "experiments/two_variable/table.py",
                    "experiments/two_variable/data.py", "experiments/two_variable/settings.py"),
              params=("two_variable.models", "two_variable.seeds", "two_variable.data.size",
                      TRAIN_BUDGET),
              family="tables",
              dvc=(DvcStage(f"tprepro two-variable-tables --table {TABLE} "
                            "--curves results/figures/two_variable_learning_curves.png "
                            f"--metrics {METRICS}",
                            deps=(EVALS, MODELS),
                            results=(*table_files(TABLE, "two_variable"),
                                     Reported("results/figures/two_variable_learning_curves.png",
                                              "two_variable_curves")),
                            metrics=(METRICS,),
                            plots=(model_bars(BARS_PLOT, "expression type", "exact-match accuracy",
                                              f"{TITLE}: accuracy per expression type, every model (pooled over seeds)"),
                                   model_curves(CURVES_PLOT, f"{TITLE}: every run's held-out exact match "
                                                             "per checkpoint"))),)),
        Stage("interpret-two-variable", "attention maps (and ponder maps of an adaptive model) of one model",
              options("model_dir", "out", test=SHARED_OPTIONS["test"].at(TEST)), _interpret,
              code=(*INTERPRETING, "experiments/two_variable/data.py", "experiments/two_variable/interpret.py"),
              params=("interpret.seed", "interpret.examples", "interpret.attention", "two_variable.interpret.ponder"),
              family="tables",
              dvc=(DvcStage(f"tprepro interpret-two-variable --model-dir {MODEL} "
                            f"--out {INTERPRETED}/{RUN}",
                            matrix=RUNS,
                            deps=(*trained(MODEL), f"{EVALS}/{RUN}.csv", TEST),
                            results=(Reported(f"{INTERPRETED}/{RUN}", "interpret_two_variable", "Interpretation"),)),)),
    ),
    models=lambda params: {"two_variable.models": list(params["two_variable"]["models"])},
    check=check_two_variable,
    example_items={"item.model": "ut", "item.seed": "1"},
    report_category="Two-variable arithmetic",
)
