"""Learning per step: the project's trainer stream against a plain shuffled-rows reference loop.

Trains each (model, stream) pair for a few hundred steps on one real mixed-module
sample (the real mathematics_dataset generator through the project's data stage,
every training module in train-easy/medium/hard, generated once into a cache
folder) and prints the mean training loss per window of steps, plus the padding
waste and the modules per batch of each stream. The reference loop is the yardstick: rows
uniformly shuffled each epoch, padded batches in that order, the same model,
initialisation seed, Adam settings and gradient clipping as the trainer.

    python -m benchmarks.learning                      # tiny models, both streams, 300 steps
    python -m benchmarks.learning --models d128 --steps 500 --threads 2
    python -m benchmarks.learning --streams trainer --pool-batches 1       # random batches
    python -m benchmarks.learning --streams trainer --pool-batches 1 --packing   # the same, packed rows
    python -m benchmarks.learning --steps 0 --batching buckets --bucket-width 32   # padding and mix only
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

from tprepro.data.vocab import Vocab
from tprepro.experiments.mathematics.modules import TRAIN_MODULES
from tprepro.models.registry import build_model, resolve_model_config
from tprepro.params import TrainConfig
from tprepro import training
from tprepro.train.step import optimizer_step

from benchmarks.kit.overrides import SIZES, cpu_run, params_train
from benchmarks.kit.report import markdown_table, stamp, write_report
from benchmarks.kit.runner import Recorder, preset_run, train
from benchmarks.kit.sample import REPO, all_rows, training_sample

ARCHS = {"transformer": "transformer_tiny", "tp_transformer": "tp_transformer_tiny"}


# ---- the two streams -----------------------------------------------------------------------------
def reference_batches(rows: list[tuple[str, str]], batch_size: int, seed: int):
    """Uniformly shuffled rows each epoch, consecutive batches, padded."""
    rng = random.Random(seed)
    epoch = list(rows)
    while True:
        rng.shuffle(epoch)
        for start in range(0, len(epoch) - batch_size + 1, batch_size):
            yield epoch[start : start + batch_size]


def batch_mix(row_batches, collate, vocab: Vocab, module_of: dict[str, str], n: int = 200) -> dict:
    """Over the first `n` batches (collated by `collate`, as the stream does): the share of padded
    positions in the source and target tensors, and the mean number of distinct modules per batch."""
    pad = total = modules = 0
    for _ in range(n):
        rows = next(row_batches)
        modules += len({module_of[q] for q, _ in rows})
        batch = collate(rows)
        for t in (batch.src, batch.tgt_out):  # [B, S], [B, T]
            pad += int((t == vocab.pad_id).sum())
            total += t.numel()
    return {"padding_waste": pad / total, "modules_per_batch": modules / n}


def train_config(args) -> TrainConfig:
    return cpu_run(params_train(args.params), args.steps, args.threads, batch_size=args.batch_size, lr=args.lr,
                   warmup_steps=0, log_every=args.window, bucket_width=args.bucket_width, batching=args.batching,
                   pool_batches=args.pool_batches, loss_weighting=args.loss_weighting, packing=args.packing)


def run_trainer(model_cfg, config: TrainConfig, datasets, vocab, seed: int) -> tuple[list[float], float]:
    losses = Recorder()
    _, seconds = train(preset_run("learning", seed, model_cfg, config, datasets, vocab), [losses])
    return [point["loss"] for point in losses.logged], seconds


def run_reference(model_cfg, config: TrainConfig, rows, vocab, seed: int) -> tuple[list[float], float]:
    torch.set_num_threads(config.threads)
    torch.manual_seed(seed)  # as the Trainer: same initial weights
    model = build_model(model_cfg, **vocab.model_sizes()).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=tuple(config.betas))
    batches = reference_batches(rows, config.batch_size, seed)
    losses, windows = [], []
    started = time.perf_counter()
    for step in range(1, config.steps + 1):
        batch = vocab.collate(next(batches))
        losses.append(float(optimizer_step(model, optimizer, batch, vocab.pad_id, config.grad_clip)))
        if step % config.log_every == 0:
            windows.append(sum(losses) / len(losses))
            losses = []
    return windows, time.perf_counter() - started


# ---- main ----------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["tiny"], choices=sorted(SIZES))
    parser.add_argument("--archs", nargs="+", default=sorted(ARCHS), choices=sorted(ARCHS))
    parser.add_argument("--streams", nargs="+", default=["trainer", "reference"], choices=["trainer", "reference"])
    parser.add_argument("--steps", type=int, default=300, help="0: padding waste and modules per batch only")
    parser.add_argument("--window", type=int, default=100, help="steps per reported loss window")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-4, help="Adam, no warm-up")
    parser.add_argument("--batching", default="pool", choices=["pool", "buckets"], help="trainer stream's batch order")
    parser.add_argument("--pool-batches", type=int, default=16, help="batching pool: batches per sorted pool")
    parser.add_argument("--bucket-width", type=int, default=8, help="batching buckets: width; 1000 = no bucketing")
    parser.add_argument("--loss-weighting", default="batch", choices=["batch", "token"],
                        help="trainer stream: each batch's mean (batch) or every token alike (token)")
    parser.add_argument("--packing", action="store_true", help="trainer stream: several problems per row")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modules", nargs="+", default=list(TRAIN_MODULES))
    parser.add_argument("--per-module", type=int, default=300, help="problems per module and training split")
    parser.add_argument("--rows-per-shard", type=int, default=100, help="shards per dataset = per-module / this")
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/learning_data")
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml", help="train: settings not set here")
    parser.add_argument("--label", default="", help="a name for this run in the JSON (e.g. before/after)")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/learning.json")
    args = parser.parse_args()

    datasets, vocab = training_sample(args.cache, args.per_module, args.rows_per_shard, args.seed, args.modules)
    rows, module_of = all_rows(datasets)
    config = train_config(args)
    print(f"{len(rows)} problems, {len(datasets)} datasets, {sum(len(d.files) for d in datasets.values())} shards; "
          f"batch {config.batch_size}, Adam lr {config.lr}, clip {config.grad_clip}, {args.threads} thread(s)")

    mix = {"reference": batch_mix(reference_batches(rows, config.batch_size, args.seed), vocab.collate, vocab,
                                  module_of)}
    run = preset_run("waste", args.seed, resolve_model_config(ARCHS[args.archs[0]]), config, datasets, vocab)
    with tempfile.TemporaryDirectory() as tmp:
        stream = training.trainer(run, folder=Path(tmp)).stream  # as the trainer builds it
        order = (f"pool_batches {config.pool_batches}" if config.batching == "pool"
                 else f"bucket_width {config.bucket_width}") + f", loss_weighting {config.loss_weighting}"
        order += ", packed" if config.packing else ""
        mix[f"trainer ({order})"] = batch_mix(iter(stream.next_rows, None), stream.collate, vocab, module_of)
    for name, m in mix.items():
        print(f"first 200 batches, {name}: {m['padding_waste']:.1%} padded positions, "
              f"{m['modules_per_batch']:.1f} modules per batch", flush=True)

    report = {"label": args.label, "argv": sys.argv[1:], **stamp(), "problems": len(rows), "datasets": len(datasets),
              "train": dataclasses.asdict(config), "batches": mix, "results": []}
    for size in args.models if args.steps else []:
        for arch in args.archs:
            model_cfg = resolve_model_config(ARCHS[arch], SIZES[size])
            for stream in args.streams:
                if stream == "trainer":
                    windows, seconds = run_trainer(model_cfg, config, datasets, vocab, args.seed)
                else:
                    windows, seconds = run_reference(model_cfg, config, rows, vocab, args.seed)
                report["results"].append({"model": size, "arch": arch, "stream": stream, "window_loss": windows,
                                          "seconds": seconds})
                print(f"{size:>5} {arch:<15} {stream:<10} " + " ".join(f"{w:6.3f}" for w in windows)
                      + f"   ({seconds:.0f} s)", flush=True)
                write_report(args.out, report)  # after every run
    write_report(args.out, report)
    if report["results"]:
        print_table(report["results"], args.window)
    print(f"-> {args.out}")


def print_table(results: list[dict], window: int) -> None:
    n = max(len(r["window_loss"]) for r in results)
    print("\n" + markdown_table(["model", "arch", "stream", *(str(window * (i + 1)) for i in range(n)), "s"],
                                [[r["model"], r["arch"], r["stream"], *(f"{w:.3f}" for w in r["window_loss"]),
                                  f"{r['seconds']:.0f}"] for r in results]))


if __name__ == "__main__":
    main()
