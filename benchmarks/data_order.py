"""Batch order against learning: held-out loss and accuracy per batch order, paired by seed.

For one experiment, trains its model (the params file's first model, or `--model`) under
each batch order ("arm") and seed through the project's Trainer on the experiment's own
data, and every `--eval-every` steps scores a fixed held-out set: the mean teacher-forced
loss per target unit and the experiment's accuracy (exact match for Mathematics and
two-variable, the task's first table column for AlgoLisp (Acc) and MathQA; summarization:
loss only, beam-search ROUGE being too slow for a sweep). The clock stops while scoring,
so `seconds` is training time alone (`cpu_seconds` its process CPU time: with one torch thread,
samples per CPU-second compare arms even while other jobs share the cores). Per arm it prints mean ± sd over seeds at equal
steps and at equal wall time (each seed's fastest arm's training time), the paired
difference from random batches with its 95% t interval, samples/s, and the batch
diversity of its stream (distinct modules or templates per batch, padded positions).

Arms: `buckets` (today's length buckets, the params file's bucket_width), `bucketsW`
(width W), `random` (uniformly random batches: pools of one batch) and `poolN`
(batches cut from length-sorted pools of N batches, in a random order); a trailing `t`
(`pool16t`) weighs every target token alike across batches (`train.loss_weighting: token`).

    python benchmarks/data_order.py --experiment algolisp --seeds 1 2 3
    python benchmarks/data_order.py --experiment mathematics --steps 1500 --arms buckets random pool16
    python benchmarks/data_order.py --experiment mathqa --mathqa-dir ../shared/data/mathqa
    python benchmarks/data_order.py --tables results/benchmarks/data_order-*.json   # reprint finished sweeps
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import yaml
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning import REPO, generate_sample  # noqa: E402  (the real generator through the data stage)

from tprepro.data.batching import BatchStream  # noqa: E402
from tprepro.data.shards import iter_rows, open_dataset  # noqa: E402
from tprepro.data.vocab import build_vocab  # noqa: E402
from tprepro.evaluate.curves import heldout_loss  # noqa: E402
from tprepro.evaluate.evaluate import predict_ids  # noqa: E402
from tprepro.experiments.mathematics.modules import INTERPOLATE, TRAIN_SPLITS  # noqa: E402
from tprepro.io import atomic_write_text  # noqa: E402
from tprepro.params import TrainConfig, apply_overrides, load_params  # noqa: E402
from tprepro.experiments.n2f.settings import n2f_train  # noqa: E402
from tprepro.experiments.two_variable.settings import two_variable_train  # noqa: E402
from tprepro.pipeline import model_config  # noqa: E402
from tprepro.train.callbacks import Callback  # noqa: E402
from tprepro.train.trainer import FINGERPRINT_DEFAULTS, Trainer, TrainJob  # noqa: E402
from tprepro.train.step import unwrap  # noqa: E402

EXPERIMENTS = ("mathematics", "two_variable", "algolisp", "mathqa", "summarization")
REFERENCE_ARM = "random"
DIVERSITY_BATCHES = 200


@dataclass
class Setup:
    """What one experiment's sweep needs: its training data, codec, model, settings and scorers."""

    files: list[list[Path]]  # training shards per dataset, as the training stage passes them
    codec: object  # the experiment's vocabulary (char Vocab, TupleVocab, SubwordCodec)
    model: object  # ModelConfig
    config: TrainConfig  # the experiment's merged train settings
    heldout: list[tuple[str, str]]  # (question, answer) rows never trained on
    label_of: dict[str, str]  # training question -> module / template / type
    accuracy: Callable[[torch.nn.Module], float] | None  # held-out accuracy of a model, or None


# ---- the experiments ---------------------------------------------------------------------------
def mathematics(params: dict, args) -> Setup:
    modules = params["grid"]["modules"]
    cache = args.cache / f"mathematics-n{args.per_module}-t{args.heldout}-s{args.data_seed}"
    generate_sample(cache, modules, args.per_module, 1000, args.data_seed, splits=(*TRAIN_SPLITS, INTERPOLATE),
                    test_per_module=args.heldout)
    train = {(s, m): open_dataset(cache / s / m) for s in TRAIN_SPLITS for m in modules}
    tests = [open_dataset(cache / INTERPOLATE / m) for m in modules]
    vocab = build_vocab([*train.values(), *tests])
    heldout = [(r["question"], r["answer"]) for ds in tests for r in iter_rows(ds)]
    label_of = {r["question"]: m for (_, m), ds in train.items() for r in iter_rows(ds, columns=("question",))}
    name = args.model or params["grid"]["models"][0]
    return Setup([ds.files for ds in train.values()], vocab, model_config(params, name),
                 TrainConfig.from_params(params),
                 heldout, label_of, exact_match(vocab, heldout, params["evaluate"]["max_answer_length"]))


def two_variable(params: dict, args) -> Setup:
    from tprepro.experiments.two_variable.data import TEST, TRAIN, write_two_variable

    data = params["two_variable"]["data"]
    cache = args.cache / f"two_variable-n{data['size']}-s{data['seed']}"
    if not (cache / TEST / "manifest.json").is_file():
        write_two_variable(cache, seed=data["seed"], size=data["size"], test_fraction=data["test_fraction"],
                           rows_per_shard=data["rows_per_shard"])
    train, test = open_dataset(cache / TRAIN), open_dataset(cache / TEST)
    vocab = build_vocab([train, test])
    heldout = [(r["question"], r["answer"]) for r in iter_rows(test)][: args.heldout * 10]
    label_of = {r["question"]: r["module"] for r in iter_rows(train, columns=("question", "module"))}
    name = args.model or next(iter(params["two_variable"]["models"]))
    return Setup([train.files], vocab, model_config(params, name, "two_variable.models"),
                 TrainConfig.from_params({"train": two_variable_train(params)}), heldout, label_of,
                 exact_match(vocab, heldout, params["evaluate"]["max_answer_length"]))


def n2f(task: str):
    def setup(params: dict, args) -> Setup:
        from tprepro.experiments.n2f.stages import VOCAB_FILE, data_stage, predict_programs
        from tprepro.experiments.n2f.tasks import TEST, TRAIN, get_task
        from tprepro.experiments.n2f.tuple_vocab import TupleVocab

        if task == "mathqa":
            if args.mathqa_dir is None:
                raise SystemExit("--mathqa-dir: the folder of MathQA's dev.json and test.json")
            data = {"train": str(args.mathqa_dir / "dev.json"), "test": str(args.mathqa_dir / "test.json"),
                    "train_label": "dev", "test_label": "test"}
            params = apply_overrides(params, {"n2f.tasks": [task], f"n2f.{task}.data": data})
        digest = hashlib.sha256(json.dumps(params["n2f"][task]["data"], sort_keys=True).encode()).hexdigest()
        cache = args.cache / f"{task}-{digest[:12]}"
        if not (cache / VOCAB_FILE).is_file():
            params_file = cache.with_suffix(".params.yaml")
            cache.parent.mkdir(parents=True, exist_ok=True)
            params_file.write_text(yaml.safe_dump(params))
            data_stage(str(params_file), task, cache)
        spec = get_task(task)
        columns = spec.schema.names
        train_rows = list(iter_rows(open_dataset(cache / TRAIN), columns))
        test_rows = list(iter_rows(open_dataset(cache / TEST), columns))[: args.heldout * 10]
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

        name = args.model or params["n2f"]["models"][0]
        return Setup([open_dataset(cache / TRAIN).files], codec, model_config(params, name, f"n2f.{task}.models"),
                      TrainConfig.from_params({"train": n2f_train(params, task)}),
                      [(r["question"], r["answer"]) for r in test_rows], label_of, accuracy)

    return setup


def summarization(params: dict, args) -> Setup:
    from tprepro.experiments.summarization import TEST, TRAIN
    from tprepro.experiments.summarization.settings import summarization_train
    from tprepro.experiments.summarization.stages import corpus_stage, data_stage, load_codec

    dataset = next(iter(params["summarization"]["datasets"]))
    cache = args.cache / f"summarization-{params['summarization']['corpus']['max_examples']}"
    params_file = args.cache / "summarization.params.yaml"
    if not (cache / dataset / "spm.model").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        params_file.write_text(yaml.safe_dump(params))
        corpus_stage(str(params_file), cache / "corpus")
        data_stage(str(params_file), dataset, cache / "corpus", cache / dataset)
    codec = load_codec(params, cache / dataset)
    columns = tuple(codec.columns)
    train = open_dataset(cache / dataset / TRAIN)
    heldout = [(r[columns[0]], r[columns[1]]) for r in iter_rows(open_dataset(cache / dataset / TEST), columns)]
    name = args.model or next(iter(params["summarization"]["models"]))
    return Setup([train.files], codec, model_config(params, name, "summarization.models"),
                 TrainConfig.from_params({"train": summarization_train(params)}), heldout[: args.heldout * 10],
                 {r[columns[0]]: dataset for r in iter_rows(train, columns)}, None)


SETUPS = {"mathematics": mathematics, "two_variable": two_variable, "algolisp": n2f("algolisp"),
          "mathqa": n2f("mathqa"), "summarization": summarization}


def exact_match(vocab, rows: list[tuple[str, str]], max_len: int) -> Callable[[torch.nn.Module], float]:
    def accuracy(model) -> float:
        outputs = predict_ids(model, vocab, [q for q, _ in rows], 256, max_len)
        return sum(vocab.exact_match(ids, answer) for ids, (_, answer) in zip(outputs, rows)) / len(rows)

    return accuracy


# ---- arms ----------------------------------------------------------------------------------------
# The train settings each arm sets for itself (arm_settings): files differing only in them are one sweep.
ORDER_SETTINGS = ("batching", "pool_batches", "bucket_width", "loss_weighting")


def arm_settings(arm: str, bucket_width: int) -> dict:
    """The train settings an arm name stands for (`buckets` alone: `bucket_width`); a trailing `t`
    adds `loss_weighting: token`."""
    match = re.fullmatch(r"(random|buckets|pool)(\d*)(t?)", arm)
    kind, n, token = match.groups() if match else (None, "", "")
    if kind is None or (kind == "pool" and not n) or (kind == "random" and n):
        raise SystemExit(f"unknown arm {arm!r}: buckets, bucketsW, random or poolN, each optionally ending in t")
    weighting = {"loss_weighting": "token" if token else "batch"}
    if kind == "random":
        return {"batching": "pool", "pool_batches": 1, **weighting}
    if kind == "buckets":
        return {"batching": "buckets", "bucket_width": int(n) if n else bucket_width, **weighting}
    return {"batching": "pool", "pool_batches": int(n), **weighting}


def diversity(setup: Setup, config: TrainConfig, seed: int) -> dict:
    """Over the stream's first batches: distinct modules/templates per batch and the padded share."""
    stream = BatchStream(setup.files, setup.codec, config.batch_size, config.bucket_width, seed=seed,
                         shuffle_buffer=config.shuffle_buffer, read_rows=config.read_rows, batching=config.batching,
                         pool_batches=config.pool_batches)
    labels, padded, positions = [], 0, 0
    for _ in range(DIVERSITY_BATCHES):
        rows = stream.next_rows()
        labels.append(len({setup.label_of.get(q, "?") for q, _ in rows}))
        batch = setup.codec.collate(rows)
        for tensor in (batch.src, batch.tgt_out):  # [B, S], [B, T] (or [B, T, 1 + K])
            padded += int((tensor == setup.codec.pad_id).sum())
            positions += tensor.numel()
    return {"labels_per_batch": statistics.mean(labels), "padding": padded / positions}


class HeldOutScores(Callback):
    """Held-out loss and accuracy every `every` steps; the clock stops while scoring."""

    def __init__(self, setup: Setup, every: int, batch_size: int):
        self.setup, self.every, self.batch_size = setup, every, batch_size
        self.points: list[dict] = []
        self.trainer = None
        self.started = self.paused = self.cpu_started = self.cpu_paused = 0.0

    def on_train_start(self, trainer) -> None:
        self.trainer, self.started, self.paused = trainer, time.perf_counter(), 0.0
        self.cpu_started, self.cpu_paused = time.process_time(), 0.0

    def on_log(self, step: int, metrics: dict) -> None:
        if step % self.every and step != self.trainer.config.steps:
            return
        stop, cpu_stop = time.perf_counter(), time.process_time()
        model = unwrap(self.trainer.model)
        model.eval()
        with torch.inference_mode():
            loss = heldout_loss(model, self.setup.codec, self.setup.heldout, self.batch_size)
            accuracy = self.setup.accuracy(model) if self.setup.accuracy else None
        model.train()
        self.points.append({"step": step, "seconds": stop - self.started - self.paused,
                            "cpu_seconds": cpu_stop - self.cpu_started - self.cpu_paused, "train_loss": metrics["loss"],
                            "heldout_loss": loss, "accuracy": accuracy})
        self.paused += time.perf_counter() - stop
        self.cpu_paused += time.process_time() - cpu_stop


def train_arm(setup: Setup, config: TrainConfig, seed: int, every: int) -> list[dict]:
    scores = HeldOutScores(setup, every, batch_size=64)
    job = TrainJob(name="data-order", seed=seed, model=setup.model, config=config, files=setup.files,
                   vocab=setup.codec, data_fingerprint="benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        Trainer(job, Path(tmp) / "checkpoint.pt", callbacks=[scores]).fit()
    return scores.points


# ---- statistics ----------------------------------------------------------------------------------
def at_time(points: list[dict], seconds: float) -> dict:
    """The last point scored within `seconds` of training (the first point if none is)."""
    within = [p for p in points if p["seconds"] <= seconds + 1e-9]
    return within[-1] if within else points[0]


def interval(values: list[float]) -> dict:
    """Mean, sd and the 95% t interval of the mean."""
    n, mean = len(values), statistics.mean(values)
    sd = statistics.stdev(values) if n > 1 else float("nan")
    half = stats.t.ppf(0.975, n - 1) * sd / n ** 0.5 if n > 1 else float("nan")
    return {"mean": mean, "sd": sd, "low": mean - half, "high": mean + half, "n": n}


def summarise(runs: dict[str, dict[int, list[dict]]], batch_size: int) -> dict:
    """Per arm: final and equal-time metrics over seeds, paired differences from the reference arm, samples/s."""
    seeds = sorted(set.intersection(*(set(by_seed) for by_seed in runs.values())))
    budget = {s: min(runs[arm][s][-1]["seconds"] for arm in runs) for s in seeds}  # equal wall time per seed
    summary = {}
    for arm, by_seed in runs.items():
        entry = {"samples_per_s": interval([by_seed[s][-1]["step"] * batch_size / by_seed[s][-1]["seconds"]
                                            for s in seeds])}
        if all("cpu_seconds" in by_seed[s][-1] for s in seeds):  # robust to other jobs sharing the cores
            entry["samples_per_cpu_s"] = interval([by_seed[s][-1]["step"] * batch_size / by_seed[s][-1]["cpu_seconds"]
                                                   for s in seeds])
        for when, pick in (("steps", lambda s: runs[arm][s][-1]), ("time", lambda s: at_time(runs[arm][s], budget[s]))):
            for metric in ("heldout_loss", "accuracy"):
                values = [pick(s)[metric] for s in seeds]
                if None in values:
                    continue
                entry[f"{metric}@{when}"] = interval(values)
                if arm != REFERENCE_ARM and REFERENCE_ARM in runs:
                    reference = [(at_time(runs[REFERENCE_ARM][s], budget[s]) if when == "time"
                                  else runs[REFERENCE_ARM][s][-1])[metric] for s in seeds]
                    entry[f"{metric}@{when}.paired"] = interval([v - r for v, r in zip(values, reference)])
        summary[arm] = entry
    return summary


def print_table(summary: dict, mix: dict, experiment: str) -> None:
    def cell(entry: dict | None, scale: float = 1.0, digits: int = 3) -> str:
        if entry is None:
            return "-"
        return f"{entry['mean'] * scale:.{digits}f} ± {entry['sd'] * scale:.{digits}f}"

    def paired(entry: dict | None, scale: float = 1.0, digits: int = 3) -> str:
        if entry is None:
            return "-"
        low, high = entry["low"] * scale, entry["high"] * scale
        return f"{entry['mean'] * scale:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"

    print(f"\n{experiment}: mean ± sd over seeds; paired: arm − {REFERENCE_ARM} (95% t interval); accuracy in %")
    print("| arm | labels/batch | padding | samples/s | samples/CPU-s | held-out loss | Δ loss | accuracy | Δ accuracy "
          "| loss @ equal time | accuracy @ equal time | Δ accuracy @ equal time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for arm, entry in summary.items():
        print(f"| {arm} | {mix[arm]['labels_per_batch']:.1f} | {mix[arm]['padding']:.0%} | "
              f"{cell(entry['samples_per_s'], digits=0)} | {cell(entry.get('samples_per_cpu_s'), digits=0)} | "
              f"{cell(entry.get('heldout_loss@steps'))} | "
              f"{paired(entry.get('heldout_loss@steps.paired'))} | {cell(entry.get('accuracy@steps'), 100, 1)} | "
              f"{paired(entry.get('accuracy@steps.paired'), 100, 1)} | {cell(entry.get('heldout_loss@time'))} | "
              f"{cell(entry.get('accuracy@time'), 100, 1)} | {paired(entry.get('accuracy@time.paired'), 100, 1)} |")


def reprint(paths: list[Path], arms: list[str] | None = None) -> None:
    """The tables of finished (or partly finished) sweeps, from their JSON files. Files of one
    experiment with the same model and train settings (e.g. seeds run in parallel) are one table;
    `arms`: only these (a table pairs the seeds every shown arm has)."""
    merged: dict[str, dict] = {}
    for path in paths:
        report = json.loads(path.read_text())
        # a setting added after a sweep ran is absent from its file: at its default, the same run
        train = {**FINGERPRINT_DEFAULTS, **report["train"]}
        shared = {name: value for name, value in train.items() if name not in ORDER_SETTINGS}
        key = json.dumps([report["experiment"], report["model"], shared], sort_keys=True)
        table = merged.setdefault(key, {**report, "runs": {}, "diversity": {}, "files": [], "orders": {}})
        table["files"].append(path.name)
        table["diversity"].update(report["diversity"])
        for arm, by_seed in report["runs"].items():
            order = arm_settings(arm, train["bucket_width"])
            if table["orders"].setdefault(arm, order) != order:
                raise SystemExit(f"{path}: arm {arm} ran as {order}, in {table['files'][0]} as {table['orders'][arm]}")
            table["runs"].setdefault(arm, {}).update({int(seed): points for seed, points in by_seed.items()})
    for table in merged.values():
        runs = {arm: by_seed for arm, by_seed in table["runs"].items() if by_seed and (not arms or arm in arms)}
        summary = summarise(runs, table["train"]["batch_size"])
        seeds = sorted(set.intersection(*(set(by_seed) for by_seed in runs.values())))
        print(f"\n{' + '.join(table['files'])}: seeds {seeds}, {table['train']['steps']} steps of "
              f"{table['train']['batch_size']}")
        print_table(summary, table["diversity"], table["experiment"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", choices=EXPERIMENTS, help="the experiment to sweep")
    parser.add_argument("--tables", nargs="+", type=Path, help="instead: print the tables of these JSON files")
    parser.add_argument("--arms", nargs="+", default=["buckets", "random", "pool16", "pool64"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="training seeds (paired over arms)")
    parser.add_argument("--steps", type=int, default=None, help="default: the experiment's train.steps")
    parser.add_argument("--eval-every", type=int, default=None, help="default: a tenth of the steps")
    parser.add_argument("--model", default=None, help="a model name of the experiment's params (default: the first)")
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml")
    parser.add_argument("--heldout", type=int, default=40, help="Mathematics: per module; others: ten times this")
    parser.add_argument("--per-module", type=int, default=2000, help="Mathematics: problems per module and split")
    parser.add_argument("--data-seed", type=int, default=1, help="Mathematics: the generator's seed")
    parser.add_argument("--mathqa-dir", type=Path, default=None, help="MathQA: folder of dev.json (train), test.json")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/data_order_data")
    parser.add_argument("--out", type=Path, default=None,
                        help="default results/benchmarks/data_order-<experiment>.json")
    args = parser.parse_args()
    if args.tables:
        return reprint(args.tables, args.arms if "--arms" in sys.argv else None)
    if args.experiment is None:
        parser.error("--experiment or --tables is required")

    params = load_params(args.params)
    setup = SETUPS[args.experiment](params, args)
    steps = args.steps or setup.config.steps
    every = args.eval_every or max(1, steps // 10)
    base = dataclasses.replace(setup.config, steps=steps, log_every=min(every, 50), checkpoint_every=steps,
                               device="cpu", threads=args.threads, amp=False, compile=False, processes=1)
    torch.set_num_threads(args.threads)
    print(f"{args.experiment}: {base.steps} steps of {base.batch_size}, lr {base.lr}, {len(setup.heldout)} held-out "
          f"rows, arms {' '.join(args.arms)}, seeds {args.seeds}", flush=True)
    out = args.out or REPO / f"results/benchmarks/data_order-{args.experiment}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    configs = {arm: dataclasses.replace(base, **arm_settings(arm, base.bucket_width)) for arm in args.arms}
    mix = {arm: diversity(setup, config, args.seeds[0]) for arm, config in configs.items()}
    runs: dict[str, dict[int, list[dict]]] = {arm: {} for arm in args.arms}
    report = {"experiment": args.experiment, "argv": sys.argv[1:], "model": dataclasses.asdict(setup.model),
              "train": dataclasses.asdict(base), "arms": {a: arm_settings(a, base.bucket_width) for a in args.arms},
              "diversity": mix, "runs": runs}
    for seed in args.seeds:  # seed-major: every seed's arms are paired however far the sweep gets
        for arm, config in configs.items():
            runs[arm][seed] = train_arm(setup, config, seed, every)
            last = runs[arm][seed][-1]
            accuracy = "-" if last["accuracy"] is None else f"{last['accuracy']:.3f}"
            print(f"seed {seed} {arm:<10} loss {last['heldout_loss']:.4f} accuracy {accuracy} "
                  f"({last['seconds']:.0f} s)", flush=True)
            atomic_write_text(out, json.dumps(report, indent=2) + "\n")
    report["summary"] = summarise(runs, base.batch_size)
    atomic_write_text(out, json.dumps(report, indent=2) + "\n")
    print_table(report["summary"], mix, args.experiment)
    print(f"-> {out}")


if __name__ == "__main__":
    main()
