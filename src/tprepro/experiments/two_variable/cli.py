"""The two-variable arithmetic experiment's stages as `tprepro` sub-commands."""

from __future__ import annotations

from pathlib import Path

from tprepro.experiments.two_variable.settings import check_two_variable
from tprepro.experiments import (COMMON, EVALUATION, INTERPRETING, PUBLISHING, TRAINING, Experiment, Stage,
                                 table_arguments, table_outputs, test_arguments,
                                 train_arguments)


def _data_arguments(p) -> None:
    p.add_argument("--out", required=True, help="directory for the train/ and test/ datasets")
    p.add_argument("--vocab", required=True, help="vocabulary file to write")


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

    tables_stage(args.params, Path(args.eval_dir), Path(args.models_dir), table_outputs(args, "curves"))


def _interpret(args) -> None:
    from tprepro.experiments.two_variable.interpret import two_variable_stage

    two_variable_stage(args.params, Path(args.model_dir), Path(args.test), Path(args.out))


EXPERIMENT = Experiment(
    name="two_variable",
    title="Wangperawong 2018: Transformer, UT and AUT on two-variable arithmetic (Table 3)",
    stages=(
        Stage("two-variable-data", "generate the two-variable arithmetic data (train/ and test/) and its vocabulary",
              "tprepro two-variable-data --out data/two_variable --vocab data/two_variable/vocab.json",
              _data_arguments, _data,
              code=(*COMMON, "experiments/two_variable/data.py", "experiments/two_variable/stages.py",
                    "data/shards.py", "data/vocab.py"),
              params=("two_variable.data", "vocab")),
        Stage("two-variable-train", "train one model of the two-variable experiment",
              "tprepro two-variable-train --model ut --seed 1 --train data/two_variable/train "
              "--vocab data/two_variable/vocab.json --out two_variable/models/ut-s1 "
              "--checkpoints two_variable/checkpoints/ut-s1 --heldout data/two_variable/test",
              lambda p: train_arguments(p, "two_variable.models", heldout=True, seeds="two_variable.seeds"), _train,
              code=(*TRAINING, "experiments/two_variable/stages.py"),
              params=("two_variable.models.{model}", "two_variable.train", "train", "evaluate")),
        Stage("two-variable-evaluate", "test accuracy per expression type",
              "tprepro two-variable-evaluate --model-dir two_variable/models/ut-s1 --test data/two_variable/test "
              "--out two_variable/eval/ut-s1.csv", lambda p: test_arguments(p, "per-type CSV"), _evaluate,
              code=(*EVALUATION, "experiments/two_variable/stages.py", "experiments/two_variable/data.py"),
              params=("evaluate",)),
        Stage("two-variable-tables", "the per-type table (Wangperawong, Table 3)",
              "tprepro two-variable-tables --eval-dir two_variable/eval --models-dir two_variable/models --table-csv "
              "results/tables/two_variable_types.csv --table-md results/tables/two_variable_types.md --table-html "
              "results/tables/two_variable_types.html "
              "--curves results/figures/two_variable_learning_curves.png --metrics results/two_variable_metrics.json",
              lambda p: table_arguments(p, curves="the learning-curve figure (PNG)"), _tables,
              code=(*PUBLISHING, "experiments/two_variable/stages.py", "experiments/two_variable/table.py",
                    "experiments/two_variable/data.py"),
              params=("two_variable.models", "two_variable.seeds", "two_variable.train", "two_variable.data.size",
                      "train")),
        Stage("interpret-two-variable", "attention maps (and ponder maps of an adaptive model) of one model",
              "tprepro interpret-two-variable --model-dir two_variable/models/aut-s1 --test data/two_variable/test "
              "--out results/interpret/two_variable/aut-s1",
              lambda p: test_arguments(p, "output directory (replaced only when complete)"), _interpret,
              code=(*INTERPRETING, "experiments/two_variable/data.py", "experiments/two_variable/interpret.py"),
              params=("interpret.seed", "interpret.examples", "interpret.attention", "interpret.ponder")),
    ),
    models=lambda params: {"two_variable.models": list(params["two_variable"]["models"])},
    check=check_two_variable,
)
