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
(`pool16t`) weighs every target token alike across batches (`train.loss_weighting: token`), and a trailing `p`
(`randomp`) packs each batch's problems end to end (`train.packing: true`, Transformer presets).

    python -m benchmarks.data_order --experiment algolisp --seeds 1 2 3
    python -m benchmarks.data_order --experiment mathematics --steps 1500 --arms buckets random pool16
    python -m benchmarks.data_order --experiment mathqa --mathqa-dir ../shared/data/mathqa
    python -m benchmarks.data_order --tables results/benchmarks/data_order-*.json   # reprint finished sweeps
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
from pathlib import Path

import torch

from tprepro.data.batching import BatchStream
from tprepro.data.packing import pack
from tprepro.evaluate.curves import heldout_loss
from tprepro.params import TrainConfig, load_params
from tprepro.params.train_config import FINGERPRINT_DEFAULTS

from benchmarks.kit.overrides import cpu_run
from benchmarks.kit.report import markdown_table, stamp, write_report
from benchmarks.kit.runner import Recorder, train
from benchmarks.kit.sample import REPO
from benchmarks.kit.stats import interval
from benchmarks.kit.setups import EXPERIMENTS, SETUPS, Options, Setup

REFERENCE_ARM = "random"
DIVERSITY_BATCHES = 200


# ---- arms ----------------------------------------------------------------------------------------
# The train settings each arm sets for itself (arm_settings): files differing only in them are one sweep.
ORDER_SETTINGS = ("batching", "pool_batches", "bucket_width", "loss_weighting", "packing")


def arm_settings(arm: str, bucket_width: int) -> dict:
    """The train settings an arm name stands for (`buckets` alone: `bucket_width`); a trailing `t`
    adds `loss_weighting: token`, a trailing `p` `packing: true`."""
    match = re.fullmatch(r"(random|buckets|pool)(\d*)(t?)(p?)", arm)
    kind, n, token, packed = match.groups() if match else (None, "", "", "")
    if kind is None or (kind == "pool" and not n) or (kind == "random" and n):
        raise SystemExit(f"unknown arm {arm!r}: buckets, bucketsW, random or poolN, each optionally ending in t, p or tp")
    either = {"loss_weighting": "token" if token else "batch", "packing": bool(packed)}  # any kind of arm
    if kind == "random":
        return {"batching": "pool", "pool_batches": 1, **either}
    if kind == "buckets":
        return {"batching": "buckets", "bucket_width": int(n) if n else bucket_width, **either}
    return {"batching": "pool", "pool_batches": int(n), **either}


def diversity(setup: Setup, config: TrainConfig, seed: int) -> dict:
    """Over the stream's first batches: distinct modules/templates per batch and the padded share."""
    stream = BatchStream(setup.files, setup.codec, config.batch_size, config.bucket_width, seed=seed,
                         shuffle_buffer=config.shuffle_buffer, read_rows=config.read_rows, batching=config.batching,
                         pool_batches=config.pool_batches)
    labels, padded, positions = [], 0, 0
    for _ in range(DIVERSITY_BATCHES):
        rows = stream.next_rows()
        labels.append(len({setup.label_of.get(q, "?") for q, _ in rows}))
        batch = pack(rows, setup.codec) if config.packing else setup.codec.collate(rows)
        for tensor in (batch.src, batch.tgt_out):  # [B, S], [B, T] (or [B, T, 1 + K])
            padded += int((tensor == setup.codec.pad_id).sum())
            positions += tensor.numel()
    return {"labels_per_batch": statistics.mean(labels), "padding": padded / positions}


def heldout_scores(setup: Setup, batch_size: int):
    """The probe: the held-out loss, and the experiment's accuracy where it has one."""
    def probe(model) -> dict:
        with torch.inference_mode():
            loss = heldout_loss(model, setup.codec, setup.heldout, batch_size)
            accuracy = setup.accuracy(model) if setup.accuracy else None
        return {"heldout_loss": loss, "accuracy": accuracy}

    return probe


def train_arm(setup: Setup, config: TrainConfig, seed: int, every: int) -> list[dict]:
    """Held-out loss and accuracy every `every` steps; the clock stops while scoring."""
    scores = Recorder(heldout_scores(setup, batch_size=64), every)
    train(dataclasses.replace(setup.run, name="data-order", seed=seed, config=config), [scores])
    return [{"step": p["step"], "seconds": p["seconds"], "cpu_seconds": p["cpu_seconds"], "train_loss": p["loss"],
             "heldout_loss": p["heldout_loss"], "accuracy": p["accuracy"]} for p in scores.probed]


# ---- statistics ----------------------------------------------------------------------------------
def at_time(points: list[dict], seconds: float) -> dict:
    """The last point scored within `seconds` of training (the first point if none is)."""
    within = [p for p in points if p["seconds"] <= seconds + 1e-9]
    return within[-1] if within else points[0]


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
    print(markdown_table(
        ["arm", "labels/batch", "padding", "samples/s", "samples/CPU-s", "held-out loss", "Δ loss", "accuracy",
         "Δ accuracy", "loss @ equal time", "accuracy @ equal time", "Δ accuracy @ equal time"],
        [[arm, f"{mix[arm]['labels_per_batch']:.1f}", f"{mix[arm]['padding']:.0%}",
          cell(entry["samples_per_s"], digits=0), cell(entry.get("samples_per_cpu_s"), digits=0),
          cell(entry.get("heldout_loss@steps")), paired(entry.get("heldout_loss@steps.paired")),
          cell(entry.get("accuracy@steps"), 100, 1), paired(entry.get("accuracy@steps.paired"), 100, 1),
          cell(entry.get("heldout_loss@time")), cell(entry.get("accuracy@time"), 100, 1),
          paired(entry.get("accuracy@time.paired"), 100, 1)] for arm, entry in summary.items()]))


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
    setup = SETUPS[args.experiment](params, Options(args.cache, args.model, args.heldout, args.per_module,
                                                    args.data_seed, args.mathqa_dir))
    steps = args.steps or setup.config.steps
    every = args.eval_every or max(1, steps // 10)
    base = cpu_run(setup.config, steps, args.threads, log_every=min(every, 50))
    torch.set_num_threads(args.threads)
    print(f"{args.experiment}: {base.steps} steps of {base.batch_size}, lr {base.lr}, {len(setup.heldout)} held-out "
          f"rows, arms {' '.join(args.arms)}, seeds {args.seeds}", flush=True)
    out = args.out or REPO / f"results/benchmarks/data_order-{args.experiment}.json"
    configs = {arm: dataclasses.replace(base, **arm_settings(arm, base.bucket_width)) for arm in args.arms}
    mix = {arm: diversity(setup, config, args.seeds[0]) for arm, config in configs.items()}
    runs: dict[str, dict[int, list[dict]]] = {arm: {} for arm in args.arms}
    report = {"experiment": args.experiment, "argv": sys.argv[1:], **stamp(), "model": dataclasses.asdict(setup.model),
              "train": dataclasses.asdict(base), "arms": {a: arm_settings(a, base.bucket_width) for a in args.arms},
              "diversity": mix, "runs": runs}
    for seed in args.seeds:  # seed-major: every seed's arms are paired however far the sweep gets
        for arm, config in configs.items():
            runs[arm][seed] = train_arm(setup, config, seed, every)
            last = runs[arm][seed][-1]
            accuracy = "-" if last["accuracy"] is None else f"{last['accuracy']:.3f}"
            print(f"seed {seed} {arm:<10} loss {last['heldout_loss']:.4f} accuracy {accuracy} "
                  f"({last['seconds']:.0f} s)", flush=True)
            write_report(out, report)
    report["summary"] = summarise(runs, base.batch_size)
    write_report(out, report)
    print_table(report["summary"], mix, args.experiment)
    print(f"-> {out}")


if __name__ == "__main__":
    main()
