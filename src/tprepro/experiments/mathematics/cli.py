"""The Mathematics Dataset experiment's stages as `tprepro` sub-commands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tprepro.train.files import CURVE_FILE, MODEL_FILE, TRAIN_METRICS
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, SPLITS, TRAIN_SPLITS
from tprepro.experiments.mathematics.settings import (check_mathematics, data_work, evaluate_work, train_work,
                                                      vocab_work)
from tprepro.experiments import (PIPELINE, COMMON, EVALUATION, INTERPRETING, MODEL_CODE, PUBLISHING, SHARED_OPTIONS, TRAINING,
                                 Digested, DvcStage, Experiment, Option, Reported, Stage, accuracy_bars, learning_curve,
                                 model_bars, model_curves, options, plot_data,
                                 role_sharpness_file, table_arguments, table_files, table_outputs, train_arguments, trained)


def _dirs(paths: list[str]) -> list[Path]:
    return [Path(p) for p in paths]


SLURM_CPUS = "SLURM_CPUS_PER_TASK"


def _processes(value: str) -> int | str:
    """--processes: a positive count, or auto."""
    if value == "auto":
        return value
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto, got {value!r}")
    return int(value)


def data_processes(option: int | str) -> int:
    """The generator processes of a data job: --processes, or for auto the CPUs SLURM allotted the job
    (`cluster.data.cpus`, or the plan's where that is null), else 1."""
    return int(os.environ.get(SLURM_CPUS, "1")) if option == "auto" else option


def _data(args) -> None:
    from tprepro.experiments.mathematics.data_stage import run_data_stage
    from tprepro.params import load_params

    params = load_params(args.params, models=False)  # may run in the generation venv (no torch)
    run_data_stage(args.split, args.module, Path(args.out), params["data"], processes=data_processes(args.processes))


def _split_index(args) -> None:
    from tprepro.experiments.mathematics.data_stage import split_index_stage

    split_index_stage(args.params, args.split, Path(args.data), Path(args.out))


def _vocab(args) -> None:
    from tprepro.experiments.mathematics.stages import build_vocab_stage

    build_vocab_stage(args.params, _dirs(args.train), Path(args.out))


def _train(args) -> None:
    from tprepro.experiments.mathematics.stages import train_stage

    train_stage(args.params, args.model, args.seed, _dirs(args.train), Path(args.vocab), Path(args.out),
                Path(args.checkpoints), Path(args.heldout))


def _train_processes(args) -> int:
    from tprepro.params import load_params

    return load_params(args.params)["train"]["processes"]


def _evaluate(args) -> None:
    from tprepro.experiments.mathematics.stages import evaluate_stage

    evaluate_stage(args.params, Path(args.model_dir), Path(args.interpolate), Path(args.extrapolate),
                   _dirs(args.train), Path(args.out))


FIGURES = {"modules_csv": "accuracy per model, module and split (CSV)",
           "figure": "the per-module accuracy figure (PNG)", "curves": "the learning-curve figure (PNG)"}


def _tables(args) -> None:
    from tprepro.experiments.mathematics.stages import tables_stage

    tables_stage(args.params, Path(args.eval_dir), Path(args.models_dir), table_outputs(args, *FIGURES, "plot", "curve_plot"))


def _interpret(args) -> None:
    from tprepro.experiments.mathematics.interpret import mathematics_stage

    mathematics_stage(args.params, Path(args.model_dir), Path(args.interpolate), Path(args.out))


def _reconstruction(args) -> None:
    from tprepro.experiments.mathematics.interpret import reconstruction_stage

    reconstruction_stage(args.params, Path(args.interpret_dir), Path(args.models_dir),
                         {"csv": Path(args.csv), "md": Path(args.md), "png": Path(args.figure)})


# dvc.yaml's paths: a run's model and seed range over RUNS. Like every experiment's, its runs write
# under its own folder: <experiment>/models/<run>/, checkpoints/<run>/, eval/<run>.csv, interpret/<run>/;
# what is drawn over all runs goes under results/.
RUNS = {"model": "${grid.models}", "seed": "${grid.seeds}"}
RUN = "${item.model}-s${item.seed}"
MODELS, CHECKPOINTS, EVALS = "mathematics/models", "mathematics/checkpoints", "mathematics/eval"
MODEL = f"{MODELS}/{RUN}"
EVALUATED = Digested(f"{EVALS}/{RUN}.csv", beside=(role_sharpness_file(f"{EVALS}/{RUN}.csv"),))
DATA = "data/mathematics"
TRAIN_DIRS = tuple(f"{DATA}/{split}" for split in TRAIN_SPLITS)
HELDOUT = f"{DATA}/{INTERPOLATE}"
EXTRAPOLATION = f"{DATA}/{EXTRAPOLATE}"


def split_index(split: str) -> str:
    """A split's index file (split-index): the one input standing for its module directories."""
    return f"{DATA}/{split}.json"


TRAIN_INDEXES = tuple(map(split_index, TRAIN_SPLITS))
HELDOUT_INDEX, EXTRAPOLATION_INDEX = split_index(INTERPOLATE), split_index(EXTRAPOLATE)
VOCAB = Digested("data/vocab.json")
TABLE = "results/tables/table1"
METRICS = "results/metrics.json"
BARS_PLOT, CURVES_PLOT = "results/plots/mathematics.csv", "results/plots/mathematics_curves.csv"
TITLE = "Mathematics Dataset"  # the DVC plots' titles start with it
RECONSTRUCTION = "results/interpret/head_reconstruction"
INTERPRETED = "mathematics/interpret"

SPLIT = Option("train-easy | train-medium | train-hard | interpolate | extrapolate")
# The data options default to the pipeline's folders, so its commands name only what varies by job.
TRAIN_DATA = Option("train split directories", many=True).at(TRAIN_DIRS)

EXPERIMENT = Experiment(
    name="mathematics",
    title="Schlag et al.: TP-Transformer vs Transformer on the Mathematics Dataset (Table 1, Fig. 2)",
    stages=(
        Stage("data", "generate (or import) one Mathematics Dataset module/split as shards",
              options(split=SPLIT, module="a module name, e.g. arithmetic__add_or_sub",
                      out="dataset directory to write",
                      processes=Option("shards generated in parallel (auto: the CPUs SLURM gave the job, else 1)",
                                       type=_processes, default="auto")),
              _data,
              code=(*COMMON, "experiments/mathematics/data_stage.py", "experiments/mathematics/generate.py",
                    "experiments/mathematics/release.py", "experiments/mathematics/modules.py", "data/shards.py",
                    "data/resume.py", "children.py"),
              params=("data",),
              family="data", work=data_work,
              dvc=(DvcStage("tprepro data --split ${item.split} --module ${item.module} "
                            "--out data/mathematics/${item.split}/${item.module} --processes auto",
                            matrix={"split": (*TRAIN_SPLITS, INTERPOLATE), "module": "${grid.modules}"},
                            outs=("data/mathematics/${item.split}/${item.module}",)),
                   DvcStage("tprepro data --split extrapolate --module ${item} "
                            f"--out {EXTRAPOLATION}/${{item}} --processes auto",
                            name="data_extrapolate", foreach="${grid.extrapolation_modules}",
                            outs=(f"{EXTRAPOLATION}/${{item}}",)))),
        Stage("split-index", "index one split's module datasets (rows, manifest SHA-256) for the stages reading it",
              options(split=SPLIT, data=Option("the directory holding the split directories").at(DATA),
                      out="index file to write (JSON)"),
              _split_index,
              code=(*COMMON, "experiments/mathematics/data_stage.py", "experiments/mathematics/modules.py",
                    "data/shards.py", "children.py"),
              params=("grid.modules", "grid.extrapolation_modules"),
              dvc=(DvcStage(f"tprepro split-index --split ${{item.split}} --out {split_index('${item.split}')}",
                            matrix={"split": SPLITS}, deps=(f"{DATA}/${{item.split}}",),
                            outs=(split_index("${item.split}"),)),)),
        Stage("vocab", "build the character vocabulary from the training shards",
              options(train=TRAIN_DATA, out="vocabulary file to write (JSON)"), _vocab,
              code=(*COMMON, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py",
                    "data/shards.py", "data/vocab.py", "data/batching.py", *PIPELINE),
              params=("vocab", "grid.modules"),
              family="vocab", work=vocab_work,
              dvc=(DvcStage(f"tprepro vocab --out {VOCAB}",
                            deps=TRAIN_INDEXES, outs=(VOCAB,)),)),
        Stage("train", "train one model (resumes from its last checkpoint)",
              train_arguments("models:", "grid.seeds", train=TRAIN_DATA, vocab=SHARED_OPTIONS["vocab"].at(VOCAB),
                              heldout=SHARED_OPTIONS["heldout"].at(HELDOUT)),
              _train, processes=_train_processes,
              code=(*TRAINING, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("models.{model}", "train", "evaluate.max_answer_length", "grid.modules"),
              family="train", work=train_work,
              dvc=(DvcStage("tprepro train --model ${item.model} --seed ${item.seed} "
                            f"--out {MODEL} --checkpoints {CHECKPOINTS}/{RUN}",
                            matrix=RUNS, deps=(VOCAB, *TRAIN_INDEXES, HELDOUT_INDEX),
                            outs=(f"{MODEL}/{MODEL_FILE}",), results=(f"{MODEL}/{TRAIN_METRICS}",),
                            plots=(learning_curve(f"{MODEL}/{CURVE_FILE}", TITLE),)),)),
        Stage("evaluate", "per-module accuracy on interpolate, extrapolate and a train sample",
              options("model_dir", interpolate=Option("interpolate split directory").at(HELDOUT),
                      extrapolate=Option("extrapolate split directory").at(EXTRAPOLATION),
                      train=Option("train split directories (for the train sample)", many=True).at(TRAIN_DIRS),
                      out="per-module CSV"),
              _evaluate,
              code=(*EVALUATION, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("evaluate", "grid.modules", "grid.extrapolation_modules", "train.device"),
              family="evaluate", work=evaluate_work,
              dvc=(DvcStage(f"tprepro evaluate --model-dir {MODEL} --out {EVALS}/{RUN}.csv",
                            matrix=RUNS,
                            deps=(*trained(MODEL), HELDOUT_INDEX, EXTRAPOLATION_INDEX, *TRAIN_INDEXES),
                            plots=(accuracy_bars(EVALUATED, per="module", experiment=TITLE),)),)),
        Stage("tables", "assemble Table 1, the per-module table and figure",
              table_arguments(located={"models_dir": MODELS, "eval_dir": EVALS}, **FIGURES,
                              plot=plot_data(BARS_PLOT, "accuracy per model, module and split"),
                              curve_plot=plot_data(CURVES_PLOT, "every run's learning curve")), _tables,
              code=(*PUBLISHING, *MODEL_CODE, "experiments/mathematics/stages.py",
                    "experiments/mathematics/figures.py"),
              params=("report", "grid.modules", "grid.extrapolation_modules", "grid.models", "grid.seeds", "models",
                      "train.steps", "train.batch_size", "data.source", "data.test_per_module", "evaluate.train_sample"),
              family="tables",
              dvc=(DvcStage(f"tprepro tables --table {TABLE} "
                            f"--metrics {METRICS} --modules-csv results/tables/mathematics_modules.csv "
                            "--figure results/figures/mathematics_modules.png "
                            "--curves results/figures/learning_curves.png",
                            deps=(EVALS, MODELS),
                            results=(Reported("results/tables/mathematics_modules.csv", "modules"),
                                     *table_files(TABLE, "table1"),
                                     Reported("results/figures/mathematics_modules.png", "figure"),
                                     Reported("results/figures/learning_curves.png", "learning_curves")),
                            metrics=(METRICS,),
                            plots=(model_bars(BARS_PLOT, "module", "exact-match accuracy",
                                              f"{TITLE}: accuracy per module, every model (pooled over seeds)"),
                                   model_curves(CURVES_PLOT, f"{TITLE}: every run's held-out exact match "
                                                             "per checkpoint"))),)),
        Stage("interpret-mathematics", "attention maps, role clusters, head reconstruction and role one-hotness "
              "of one trained model (those its architecture has)",
              options("model_dir", "out",
                      interpolate=Option("interpolate split directory (interpret.module is sampled)").at(HELDOUT)),
              _interpret,
              code=(*INTERPRETING, "experiments/mathematics/modules.py", "experiments/mathematics/interpret.py"),
              params=("interpret.seed", "interpret.module", "interpret.examples", "interpret.attention",
                      "interpret.role_clusters", "interpret.head_reconstruction", "interpret.one_hotness"),
              family="tables",
              dvc=(DvcStage(f"tprepro interpret-mathematics --model-dir {MODEL} --out {INTERPRETED}/{RUN}",
                            matrix=RUNS,
                            deps=(*trained(MODEL), f"{EVALS}/{RUN}.csv", f"{HELDOUT}/${{interpret.module}}"),
                            results=(Reported(f"{INTERPRETED}/{RUN}", "interpret_mathematics", "Interpretation"),)),)),
        Stage("interpret-reconstruction", "the head-reconstruction MSE table and bar chart over the grid's runs",
              options(models_dir=SHARED_OPTIONS["models_dir"].at(MODELS),
                      interpret_dir=Option("directory of the runs' interpret-mathematics outputs").at(INTERPRETED),
                      csv="the MSE table (CSV)",
                      md="the MSE table (markdown)", figure="the MSE bar chart (PNG)"),
              _reconstruction,
              code=(*INTERPRETING, *PUBLISHING, "experiments/mathematics/interpret.py"),
              params=("grid.models", "grid.seeds"),
              family="tables",
              dvc=(DvcStage(f"tprepro interpret-reconstruction --csv {RECONSTRUCTION}.csv --md {RECONSTRUCTION}.md "
                            f"--figure {RECONSTRUCTION}.png",
                            deps=(INTERPRETED, MODELS),
                            results=(Reported(f"{RECONSTRUCTION}.csv", "head_reconstruction", "Interpretation"),
                                     f"{RECONSTRUCTION}.md",
                                     Reported(f"{RECONSTRUCTION}.png", "head_reconstruction", "Interpretation"))),)),
    ),
    models=lambda params: {"models": list(params["grid"]["models"])},
    check=check_mathematics,
    example_items={"item.split": "train-easy", "item.module": "arithmetic__add_or_sub",
                   "item.model": "tp_transformer", "item.seed": "1"},
    report_category="Mathematics Dataset",
)
