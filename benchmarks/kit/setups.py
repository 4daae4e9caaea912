"""Each experiment's training set-up for a benchmark, built from the experiment's own code: its data stage or
generator (cached), its codec, and its `training_run(...)` (the model and merged train settings its train stage
trains), plus a held-out sample and the experiment's own accuracy.

    setup = SETUPS["algolisp"](load_params("params.yaml"), Options(cache=Path("/tmp/cache")))
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml

from tprepro.data.shards import iter_rows, open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.evaluate.evaluate import predict_ids
from tprepro.experiments.mathematics.modules import INTERPOLATE, TRAIN_SPLITS
from tprepro.params import TrainConfig, apply_overrides
from tprepro.training import TrainingRun

from benchmarks.kit.sample import generate_sample

EXPERIMENTS = ("mathematics", "two_variable", "algolisp", "mathqa", "summarization")


@dataclass
class Options:
    """What a benchmark chooses of an experiment's set-up."""

    cache: Path  # the folder the experiments' data is made in once
    model: str | None = None  # a model name of the experiment's params (default: the first)
    heldout: int = 40  # Mathematics: held-out problems per module; others: ten times this
    per_module: int = 2000  # Mathematics: problems per module and training split
    data_seed: int = 1  # Mathematics: the generator's seed
    mathqa_dir: Path | None = None  # MathQA: the folder of dev.json (trained on) and test.json


RUN_SEED = 1  # the set-up's run's seed: a benchmark sets its own per run (dataclasses.replace)


@dataclass
class Setup:
    """What one experiment's benchmark needs: its training run (untracked, its checkpoints the benchmark's) and
    scorers."""

    run: TrainingRun  # the experiment's training_run(...): datasets, codec, model, merged train settings
    heldout: list[tuple[str, str]]  # (question, answer) rows never trained on
    label_of: dict[str, str]  # training question -> module / template / type
    accuracy: Callable[[torch.nn.Module], float] | None  # held-out accuracy of a model, or None

    @property
    def files(self) -> list[list[Path]]:
        """Training shards per dataset, as the training stage passes them."""
        return [ds.files for ds in self.run.datasets.values()]

    @property
    def codec(self):
        """The experiment's vocabulary (char Vocab, TupleVocab, SubwordCodec)."""
        return self.run.codec

    @property
    def model(self):
        """The model's ModelConfig."""
        return self.run.model

    @property
    def config(self) -> TrainConfig:
        """The experiment's merged train settings."""
        return self.run.config


def mathematics(params: dict, options: Options) -> Setup:
    from tprepro.experiments.mathematics.stages import training_run

    modules = params["grid"]["modules"]
    cache = options.cache / f"mathematics-n{options.per_module}-t{options.heldout}-s{options.data_seed}"
    generate_sample(cache, modules, options.per_module, 1000, options.data_seed, splits=(*TRAIN_SPLITS, INTERPOLATE),
                    test_per_module=options.heldout)
    train = {(s, m): open_dataset(cache / s / m) for s in TRAIN_SPLITS for m in modules}
    tests = [open_dataset(cache / INTERPOLATE / m) for m in modules]
    vocab = build_vocab([*train.values(), *tests])
    heldout = [(r["question"], r["answer"]) for ds in tests for r in iter_rows(ds)]
    label_of = {r["question"]: m for (_, m), ds in train.items() for r in iter_rows(ds, columns=("question",))}
    name = options.model or params["grid"]["models"][0]
    run = training_run(params, name, RUN_SEED, {f"{s}/{m}": ds for (s, m), ds in train.items()}, None, codec=vocab)
    return Setup(run, heldout, label_of, exact_match(vocab, heldout, params["evaluate"]["max_answer_length"]))


def two_variable(params: dict, options: Options) -> Setup:
    from tprepro.experiments.two_variable.data import TEST, TRAIN, write_two_variable
    from tprepro.experiments.two_variable.stages import training_run

    data = params["two_variable"]["data"]
    cache = options.cache / f"two_variable-n{data['size']}-s{data['seed']}"
    if not (cache / TEST / "manifest.json").is_file():
        write_two_variable(cache, seed=data["seed"], size=data["size"], test_fraction=data["test_fraction"],
                           rows_per_shard=data["rows_per_shard"])
    train, test = open_dataset(cache / TRAIN), open_dataset(cache / TEST)
    vocab = build_vocab([train, test])
    heldout = [(r["question"], r["answer"]) for r in iter_rows(test)][: options.heldout * 10]
    label_of = {r["question"]: r["module"] for r in iter_rows(train, columns=("question", "module"))}
    name = options.model or next(iter(params["two_variable"]["models"]))
    return Setup(training_run(params, name, RUN_SEED, {"train": train}, None, codec=vocab), heldout, label_of,
                 exact_match(vocab, heldout, params["evaluate"]["max_answer_length"]))


def n2f(task: str):
    def setup(params: dict, options: Options) -> Setup:
        from tprepro.experiments.n2f.stages import VOCAB_FILE, data_stage, predict_programs, training_run
        from tprepro.experiments.n2f.tasks import TEST, TRAIN, get_task
        from tprepro.experiments.n2f.tuple_vocab import TupleVocab

        if task == "mathqa":
            if options.mathqa_dir is None:
                raise SystemExit("--mathqa-dir: the folder of MathQA's dev.json and test.json")
            data = {"train": str(options.mathqa_dir / "dev.json"), "test": str(options.mathqa_dir / "test.json"),
                    "train_label": "dev", "test_label": "test"}
            params = apply_overrides(params, {"n2f.tasks": [task], f"n2f.{task}.data": data})
        digest = hashlib.sha256(json.dumps(params["n2f"][task]["data"], sort_keys=True).encode()).hexdigest()
        cache = options.cache / f"{task}-{digest[:12]}"
        if not (cache / VOCAB_FILE).is_file():
            params_file = cache.with_suffix(".params.yaml")
            cache.parent.mkdir(parents=True, exist_ok=True)
            params_file.write_text(yaml.safe_dump(params))
            data_stage(str(params_file), task, cache)
        spec = get_task(task)
        columns = spec.schema.names
        train_rows = list(iter_rows(open_dataset(cache / TRAIN), columns))
        test_rows = list(iter_rows(open_dataset(cache / TEST), columns))[: options.heldout * 10]
        codec = TupleVocab.load(cache / VOCAB_FILE)
        label_column = "nodes" if task == "algolisp" else "category"  # the generator's template, MathQA's category
        label_of = {r["question"]: r[label_column] for r in train_rows}
        settings, metric = params["n2f"][task], spec.columns[0]
        split = spec.split_label(settings["data"], TEST)
        evaluation = params["n2f"]["evaluate"]

        def accuracy(model) -> float:
            programs = predict_programs(model, codec, [r["question"] for r in test_rows], evaluation["batch_size"],
                                        evaluation["max_tuples"])
            rows = spec.score(test_rows, programs, settings, split)
            return next(r["accuracy"] for r in rows if r["split"] == split and r["module"] == metric.metric)

        name = options.model or params["n2f"]["models"][0]
        run = training_run(params, task, name, RUN_SEED, {"train": open_dataset(cache / TRAIN)}, None, None, codec)
        return Setup(run, [(r["question"], r["answer"]) for r in test_rows], label_of, accuracy)

    return setup


def summarization(params: dict, options: Options) -> Setup:
    from tprepro.experiments.summarization import TEST, TRAIN
    from tprepro.experiments.summarization.stages import corpus_stage, data_stage, load_codec, training_run

    dataset = next(iter(params["summarization"]["datasets"]))
    cache = options.cache / f"summarization-{params['summarization']['corpus']['max_examples']}"
    params_file = options.cache / "summarization.params.yaml"
    if not (cache / dataset / "spm.model").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        params_file.write_text(yaml.safe_dump(params))
        corpus_stage(str(params_file), cache / "corpus")
        data_stage(str(params_file), dataset, cache / "corpus", cache / dataset)
    codec = load_codec(params, cache / dataset)
    columns = tuple(codec.columns)
    train = open_dataset(cache / dataset / TRAIN)
    heldout = [(r[columns[0]], r[columns[1]]) for r in iter_rows(open_dataset(cache / dataset / TEST), columns)]
    name = options.model or next(iter(params["summarization"]["models"]))
    run = training_run(params, dataset, name, RUN_SEED, {"train": train}, None, None, cache / dataset)
    return Setup(run, heldout[: options.heldout * 10], {r[columns[0]]: dataset for r in iter_rows(train, columns)},
                 None)


SETUPS: dict[str, Callable[[dict, Options], Setup]] = {
    "mathematics": mathematics, "two_variable": two_variable, "algolisp": n2f("algolisp"), "mathqa": n2f("mathqa"),
    "summarization": summarization}


def exact_match(vocab, rows: list[tuple[str, str]], max_len: int) -> Callable[[torch.nn.Module], float]:
    def accuracy(model) -> float:
        outputs = predict_ids(model, vocab, [q for q, _ in rows], 256, max_len)
        return sum(vocab.exact_match(ids, answer) for ids, (_, answer) in zip(outputs, rows)) / len(rows)

    return accuracy
