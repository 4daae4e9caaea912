"""The Mathematics Dataset experiment's stages as `tprepro` sub-commands."""

from __future__ import annotations

from pathlib import Path

from tprepro.experiments.mathematics.settings import check_mathematics
from tprepro.experiments import (COMMON, EVALUATION, INTERPRETING, PUBLISHING, TRAINING, Experiment, Stage,
                                 table_arguments, table_outputs)


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


TRAIN_DIRS = "data/mathematics/train-easy data/mathematics/train-medium data/mathematics/train-hard"
EXPERIMENT = Experiment(
    name="mathematics",
    title="Schlag et al.: TP-Transformer vs Transformer on the Mathematics Dataset (Table 1, Fig. 2)",
    stages=(
        Stage("data", "generate (or import) one Mathematics Dataset module/split as shards",
              "tprepro data --split train-easy --module arithmetic__add_or_sub "
              "--out data/mathematics/train-easy/arithmetic__add_or_sub", _data_arguments, _data,
              code=(*COMMON, "experiments/mathematics/data_stage.py", "experiments/mathematics/generate.py",
                    "experiments/mathematics/release.py", "experiments/mathematics/modules.py", "data/shards.py"),
              params=("data",)),
        Stage("vocab", "build the character vocabulary from the training shards",
              f"tprepro vocab --train {TRAIN_DIRS} --out data/vocab.json", _vocab_arguments, _vocab,
              code=(*COMMON, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py",
                    "data/shards.py", "data/vocab.py"),
              params=("vocab", "grid.modules")),
        Stage("train", "train one model (resumes from its last checkpoint)",
              f"tprepro train --model tp_transformer --seed 1 --train {TRAIN_DIRS} --vocab data/vocab.json "
              "--out models/tp_transformer-s1 --checkpoints checkpoints/tp_transformer-s1 "
              "--heldout data/mathematics/interpolate",
              _train_arguments, _train, processes=_train_processes,
              code=(*TRAINING, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("models.{model}", "train", "evaluate", "grid.modules")),
        Stage("evaluate", "per-module accuracy on interpolate, extrapolate and a train sample",
              "tprepro evaluate --model-dir models/tp_transformer-s1 --interpolate data/mathematics/interpolate "
              f"--extrapolate data/mathematics/extrapolate --train {TRAIN_DIRS} "
              "--out results/eval/tp_transformer-s1.csv", _evaluate_arguments, _evaluate,
              code=(*EVALUATION, "experiments/mathematics/stages.py", "experiments/mathematics/modules.py"),
              params=("evaluate", "grid.modules", "grid.extrapolation_modules")),
        Stage("tables", "assemble Table 1, the per-module table and figure",
              "tprepro tables --eval-dir results/eval --models-dir models --table-csv results/tables/table1.csv "
              "--table-md results/tables/table1.md --table-html results/tables/table1.html --metrics "
              "results/metrics.json --modules-csv "
              "results/tables/mathematics_modules.csv --figure results/figures/mathematics_modules.png "
              "--curves results/figures/learning_curves.png", _tables_arguments, _tables,
              code=(*PUBLISHING, "experiments/mathematics/stages.py", "experiments/mathematics/figures.py"),
              params=("report", "grid", "train.steps", "train.batch_size", "data.test_per_module")),
        Stage("interpret-mathematics", "attention maps, role clusters, head reconstruction and role one-hotness "
              "of one trained model (those its architecture has)",
              "tprepro interpret-mathematics --model-dir models/tp_transformer-s1 --interpolate "
              "data/mathematics/interpolate --out results/interpret/mathematics/tp_transformer-s1",
              _interpret_arguments, _interpret,
              code=(*INTERPRETING, "experiments/mathematics/modules.py", "experiments/mathematics/interpret.py"),
              params=("interpret.seed", "interpret.module", "interpret.examples", "interpret.attention",
                      "interpret.role_clusters", "interpret.head_reconstruction", "interpret.one_hotness")),
        Stage("interpret-reconstruction", "the head-reconstruction MSE table and bar chart over the grid's runs",
              "tprepro interpret-reconstruction --interpret-dir results/interpret/mathematics --models-dir models "
              "--csv results/interpret/head_reconstruction.csv --md results/interpret/head_reconstruction.md "
              "--figure results/interpret/head_reconstruction.png", _reconstruction_arguments, _reconstruction,
              code=(*PUBLISHING, "interpret", "experiments/mathematics/interpret.py"),
              params=("grid",)),
    ),
    models=lambda params: {"models": list(params["grid"]["models"])},
    check=check_mathematics,
)
