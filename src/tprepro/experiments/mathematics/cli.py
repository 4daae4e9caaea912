"""The Mathematics Dataset experiment's stages as `tprepro` sub-commands."""

from __future__ import annotations

from pathlib import Path

from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS
from tprepro.experiments.mathematics.settings import check_mathematics
from tprepro.experiments import (COMMON, EVALUATION, INTERPRETING, PUBLISHING, TRAINING, DvcStage, Experiment,
                                 Stage, accuracy_bars, learning_curve, table_arguments, table_outputs, trained)


def _dirs(paths: list[str]) -> list[Path]:
    return [Path(p) for p in paths]


def _data_arguments(p) -> None:
    p.add_argument("--split", required=True,
                   help="train-easy | train-medium | train-hard | interpolate | extrapolate")
    p.add_argument("--module", required=True, help="a module name, e.g. arithmetic__add_or_sub")
    p.add_argument("--out", required=True, help="dataset directory to write")
    p.add_argument("--processes", type=int, default=1, help="shards generated in parallel (default 1)")


def _data(args) -> None:
    from tprepro.experiments.mathematics.data_stage import run_data_stage
    from tprepro.params import load_params

    params = load_params(args.params, models=False)  # may run in the generation venv (no torch)
    run_data_stage(args.split, args.module, Path(args.out), params["data"], processes=args.processes)


def _vocab_arguments(p) -> None:
    p.add_argument("--train", nargs="+", required=True, help="train split directories")
    p.add_argument("--out", required=True, help="vocabulary file to write (JSON)")


def _vocab(args) -> None:
    from tprepro.experiments.mathematics.stages import build_vocab_stage

    build_vocab_stage(args.params, _dirs(args.train), Path(args.out))


def _train_arguments(p) -> None:
    p.add_argument("--model", required=True, help="a name under models: in the params file")
    p.add_argument("--seed", type=int, required=True, help="training seed (one of grid.seeds)")
    p.add_argument("--train", nargs="+", required=True, help="train split directories")
    p.add_argument("--vocab", required=True, help="the vocabulary file (tprepro vocab)")
    p.add_argument("--out", required=True, help="directory for model.pt and train_metrics.json")
    p.add_argument("--checkpoints", required=True, help="directory for the resumable checkpoint")
    p.add_argument("--heldout", required=True,
                   help="interpolate split directory: a sample is scored at every checkpoint (learning curve)")


def _train(args) -> None:
    from tprepro.experiments.mathematics.stages import train_stage

    train_stage(args.params, args.model, args.seed, _dirs(args.train), Path(args.vocab), Path(args.out),
                Path(args.checkpoints), Path(args.heldout))


def _train_processes(args) -> int:
    from tprepro.params import load_params

    return load_params(args.params)["train"]["processes"]


def _evaluate_arguments(p) -> None:
    p.add_argument("--model-dir", required=True, help="a trained model's directory (model.pt)")
    p.add_argument("--interpolate", required=True, help="interpolate split directory")
    p.add_argument("--extrapolate", required=True, help="extrapolate split directory")
    p.add_argument("--train", nargs="+", required=True, help="train split directories (for the train sample)")
    p.add_argument("--out", required=True, help="per-module CSV")


def _evaluate(args) -> None:
    from tprepro.experiments.mathematics.stages import evaluate_stage

    evaluate_stage(args.params, Path(args.model_dir), Path(args.interpolate), Path(args.extrapolate),
                   _dirs(args.train), Path(args.out))


FIGURES = {"modules_csv": "accuracy per model, module and split (CSV)",
           "figure": "the per-module accuracy figure (PNG)", "curves": "the learning-curve figure (PNG)"}


def _tables_arguments(p) -> None:
    table_arguments(p, **FIGURES)


def _tables(args) -> None:
    from tprepro.experiments.mathematics.stages import tables_stage

    tables_stage(args.params, Path(args.eval_dir), Path(args.models_dir), table_outputs(args, *FIGURES))


def _interpret_arguments(p) -> None:
    p.add_argument("--model-dir", required=True, help="a trained model's directory (model.pt)")
    p.add_argument("--interpolate", required=True, help="interpolate split directory (interpret.module is sampled)")
    p.add_argument("--out", required=True, help="output directory (replaced only when complete)")


def _interpret(args) -> None:
    from tprepro.experiments.mathematics.interpret import mathematics_stage

    mathematics_stage(args.params, Path(args.model_dir), Path(args.interpolate), Path(args.out))


def _reconstruction_arguments(p) -> None:
    p.add_argument("--interpret-dir", required=True, help="directory of the runs' interpret-mathematics outputs")
    p.add_argument("--models-dir", required=True, help="directory of the trained models")
    p.add_argument("--csv", required=True, help="the MSE table (CSV)")
    p.add_argument("--md", required=True, help="the MSE table (markdown)")
    p.add_argument("--figure", required=True, help="the MSE bar chart (PNG)")


def _reconstruction(args) -> None:
    from tprepro.experiments.mathematics.interpret import reconstruction_stage

    reconstruction_stage(args.params, Path(args.interpret_dir), Path(args.models_dir),
                         {"csv": Path(args.csv), "md": Path(args.md), "png": Path(args.figure)})


# dvc.yaml's paths: a run's model and seed range over RUNS.
RUNS = {"model": "${grid.models}", "seed": "${grid.seeds}"}
RUN = "${item.model}-s${item.seed}"
MODEL = f"models/{RUN}"
TRAIN_DIRS = tuple(f"data/mathematics/{split}" for split in TRAIN_SPLITS)
HELDOUT = f"data/mathematics/{INTERPOLATE}"
EXTRAPOLATION = f"data/mathematics/{EXTRAPOLATE}"
VOCAB = "data/vocab.json"
TABLE = "results/tables/table1"
RECONSTRUCTION = "results/interpret/head_reconstruction"

EXPERIMENT = Experiment(
    name="mathematics",
    title="Schlag et al.: TP-Transformer vs Transformer on the Mathematics Dataset (Table 1, Fig. 2)",
    stages=(
        Stage("data", "generate (or import) one Mathematics Dataset module/split as shards",
              _data_arguments, _data,
              code=(*COMMON, "experiments/mathematics/data_stage.py", "experiments/mathematics/generate.py",
                    "experiments/mathematics/release.py", "experiments/mathematics/modules.py", "data/shards.py"),
              params=("data",),
              dvc=(DvcStage("tprepro data --split ${item.split} --module ${item.module} "
                            "--out data/mathematics/${item.split}/${item.module} --processes 1",
                            matrix={"split": (*TRAIN_SPLITS, INTERPOLATE), "module": "${grid.modules}"},
                            outs=("data/mathematics/${item.split}/${item.module}",)),
                   DvcStage("tprepro data --split extrapolate --module ${item} "
                            f"--out {EXTRAPOLATION}/${{item}} --processes 1",
                            name="data_extrapolate", foreach="${grid.extrapolation_modules}",
                            outs=(f"{EXTRAPOLATION}/${{item}}",)))),
        Stage("vocab", "build the character vocabulary from the training shards", _vocab_arguments, _vocab,
              code=(*COMMON, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py",
                    "data/shards.py", "data/vocab.py"),
              params=("vocab", "grid.modules"),
              dvc=(DvcStage(f"tprepro vocab --train {' '.join(TRAIN_DIRS)} --out {VOCAB}",
                            deps=TRAIN_DIRS, outs=(VOCAB,)),)),
        Stage("train", "train one model (resumes from its last checkpoint)",
              _train_arguments, _train, processes=_train_processes,
              code=(*TRAINING, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("models.{model}", "train", "evaluate", "grid.modules"),
              dvc=(DvcStage("tprepro train --model ${item.model} --seed ${item.seed} "
                            f"--train {' '.join(TRAIN_DIRS)} --vocab {VOCAB} --out {MODEL} "
                            f"--checkpoints checkpoints/{RUN} --heldout {HELDOUT}",
                            matrix=RUNS, deps=(VOCAB, *TRAIN_DIRS, HELDOUT),
                            outs=(f"{MODEL}/model.pt",), results=(f"{MODEL}/train_metrics.json",),
                            plots=(learning_curve(f"{MODEL}/learning_curve.csv"),)),)),
        Stage("evaluate", "per-module accuracy on interpolate, extrapolate and a train sample",
              _evaluate_arguments, _evaluate,
              code=(*EVALUATION, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("evaluate", "grid.modules", "grid.extrapolation_modules"),
              dvc=(DvcStage(f"tprepro evaluate --model-dir {MODEL} --interpolate {HELDOUT} --extrapolate "
                            f"{EXTRAPOLATION} --train {' '.join(TRAIN_DIRS)} --out results/eval/{RUN}.csv",
                            matrix=RUNS,
                            deps=(*trained(MODEL), HELDOUT, EXTRAPOLATION, *TRAIN_DIRS),
                            plots=(accuracy_bars(f"results/eval/{RUN}.csv", per="module"),)),)),
        Stage("tables", "assemble Table 1, the per-module table and figure",
              _tables_arguments, _tables,
              code=(*PUBLISHING, "experiments/mathematics/stages.py", "experiments/mathematics/figures.py"),
              params=("report", "grid", "train.steps", "train.batch_size", "data.test_per_module"),
              dvc=(DvcStage("tprepro tables --eval-dir results/eval --models-dir models "
                            f"--table-csv {TABLE}.csv --table-md {TABLE}.md --table-html {TABLE}.html "
                            "--metrics results/metrics.json --modules-csv results/tables/mathematics_modules.csv "
                            "--figure results/figures/mathematics_modules.png "
                            "--curves results/figures/learning_curves.png",
                            deps=("results/eval", "models"),
                            results=("results/tables/mathematics_modules.csv", f"{TABLE}.csv", f"{TABLE}.md",
                                     f"{TABLE}.html", "results/figures/mathematics_modules.png",
                                     "results/figures/learning_curves.png"),
                            metrics=("results/metrics.json",)),)),
        Stage("interpret-mathematics", "attention maps, role clusters, head reconstruction and role one-hotness "
              "of one trained model (those its architecture has)",
              _interpret_arguments, _interpret,
              code=(*INTERPRETING, "experiments/mathematics/modules.py", "experiments/mathematics/interpret.py"),
              params=("interpret.seed", "interpret.module", "interpret.examples", "interpret.attention",
                      "interpret.role_clusters", "interpret.head_reconstruction", "interpret.one_hotness"),
              dvc=(DvcStage(f"tprepro interpret-mathematics --model-dir {MODEL} --interpolate {HELDOUT} "
                            f"--out results/interpret/mathematics/{RUN}",
                            matrix=RUNS,
                            deps=(*trained(MODEL), f"results/eval/{RUN}.csv", f"{HELDOUT}/${{interpret.module}}"),
                            results=(f"results/interpret/mathematics/{RUN}",)),)),
        Stage("interpret-reconstruction", "the head-reconstruction MSE table and bar chart over the grid's runs",
              _reconstruction_arguments, _reconstruction,
              code=(*PUBLISHING, "interpret", "experiments/mathematics/interpret.py"),
              params=("grid",),
              dvc=(DvcStage("tprepro interpret-reconstruction --interpret-dir results/interpret/mathematics "
                            f"--models-dir models --csv {RECONSTRUCTION}.csv --md {RECONSTRUCTION}.md "
                            f"--figure {RECONSTRUCTION}.png",
                            deps=("results/interpret/mathematics",),
                            results=(f"{RECONSTRUCTION}.csv", f"{RECONSTRUCTION}.md", f"{RECONSTRUCTION}.png")),)),
    ),
    models=lambda params: {"models": list(params["grid"]["models"])},
    check=check_mathematics,
    plots=({"results/tables/mathematics_modules.csv": {
        "template": "accuracy_bars", "x": "accuracy", "y": "module", "y_label": "module",
        "title": "Mathematics Dataset, accuracy per module (pooled over seeds)"}},),
    example_items={"item.split": "train-easy", "item.module": "arithmetic__add_or_sub",
                   "item.model": "tp_transformer", "item.seed": "1"},
)
