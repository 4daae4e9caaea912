"""Learning per step: the project's trainer stream against a plain shuffled-rows reference loop.

Trains each (model, stream) pair for a few hundred steps on one real mixed-module
sample (the real mathematics_dataset generator through the project's data stage,
every training module in train-easy/medium/hard, generated once into a cache
folder) and prints the mean training loss per window of steps, plus the padding
waste and the modules per batch of each stream. The reference loop is the yardstick: rows
uniformly shuffled each epoch, padded batches in that order, the same model,
initialisation seed, Adam settings and gradient clipping as the trainer.

    python benchmarks/learning.py                      # tiny models, both streams, 300 steps
    python benchmarks/learning.py --models d128 --steps 500 --threads 2
    python benchmarks/learning.py --streams trainer --pool-batches 1       # random batches
    python benchmarks/learning.py --streams trainer --pool-batches 1 --packing   # the same, packed rows
    python benchmarks/learning.py --steps 0 --batching buckets --bucket-width 32   # padding and mix only
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from tprepro.params import TrainConfig, load_params
from tprepro.data.batching import BatchStream
from tprepro.experiments.mathematics.modules import TRAIN_MODULES, TRAIN_SPLITS
from tprepro.data.shards import Dataset, open_dataset, read_columns
from tprepro.experiments.mathematics.data_stage import generate_python
from tprepro.data.vocab import Vocab, build_vocab
from tprepro.io import atomic_write_text
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import build_model
from tprepro.train.callbacks import Callback
from tprepro.train.trainer import Trainer, TrainJob
from tprepro.train.step import optimizer_step

REPO = Path(__file__).resolve().parents[1]
# Model sizes: the tiny presets, and the d=128 configuration (3+3 layers, 4 heads, d_ff 512).
SIZES = {
    "tiny": {},
    "d128": {"d_model": 128, "n_heads": 4, "d_ff": 512, "n_encoder_layers": 3, "n_decoder_layers": 3},
}
ARCHS = {"transformer": "transformer_tiny", "tp_transformer": "tp_transformer_tiny"}


# ---- data ----------------------------------------------------------------------------------------
def generate_sample(cache: Path, modules: list[str], per_module: int, rows_per_shard: int, seed: int,
                    splits=TRAIN_SPLITS, test_per_module: int = 1) -> None:
    """Write cache/<split>/<module> for every split and module that is not there yet.

    One generation interpreter runs the project's data stage for all missing datasets
    (one process: sympy's import is paid once).
    """
    missing = [(s, m) for s in splits for m in modules if not (cache / s / m / "manifest.json").is_file()]
    if not missing:
        return
    data_cfg = {"source": "generate", "release_root": None, "seed": seed, "train_per_module": per_module,
                "test_per_module": test_per_module, "rows_per_shard": rows_per_shard}
    script = (
        "import json, sys\n"
        "from tprepro.experiments.mathematics.data_stage import run_data_stage\n"
        "cfg, cache, todo = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])\n"
        "for split, module in todo:\n"
        "    run_data_stage(split, module, f'{cache}/{split}/{module}', cfg)\n"
        "    print(split, module, flush=True)\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    print(f"generating {len(missing)} datasets of {per_module} problems into {cache}", flush=True)
    subprocess.run([str(generate_python()), "-c", script, json.dumps(data_cfg), str(cache), json.dumps(missing)],
                   env=env, check=True)


def open_sample(cache: Path, modules: list[str]) -> dict[str, Dataset]:
    return {f"{s}/{m}": open_dataset(cache / s / m) for s in TRAIN_SPLITS for m in modules}


def all_rows(datasets: dict[str, Dataset]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every (question, answer) row, and each question's module."""
    rows, module_of = [], {}
    for label, ds in datasets.items():
        for path in ds.files:
            table = read_columns(path, ("question", "answer"))
            questions = table.column("question").to_pylist()
            rows += zip(questions, table.column("answer").to_pylist())
            module_of.update(dict.fromkeys(questions, label.split("/")[1]))
    return rows, module_of


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


class StepLosses(Callback):
    def __init__(self):
        self.windows: list[float] = []

    def on_log(self, step, metrics):
        self.windows.append(metrics["loss"])


def train_config(args) -> TrainConfig:
    base = TrainConfig.from_params(load_params(args.params))
    return dataclasses.replace(base, steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup_steps=0,
                               log_every=args.window, checkpoint_every=args.steps, bucket_width=args.bucket_width,
                               batching=args.batching, pool_batches=args.pool_batches,
                               loss_weighting=args.loss_weighting, packing=args.packing,
                               device="cpu", threads=args.threads, amp=False, compile=False, processes=1)


def trainer_files(datasets: dict[str, Dataset]) -> list:
    """What stages.train_model gives TrainJob.files: shards grouped per dataset, or one flat
    list for the stream before issue 9 (the one with `open_shards`), so older code runs too."""
    if "open_shards" in inspect.signature(BatchStream).parameters:
        return [f for ds in datasets.values() for f in ds.files]
    return [ds.files for ds in datasets.values()]


def run_trainer(model_cfg, config: TrainConfig, datasets, vocab, seed: int) -> tuple[list[float], float]:
    losses = StepLosses()
    job = TrainJob(name="learning", seed=seed, model=model_cfg, config=config, files=trainer_files(datasets),
                   vocab=vocab, data_fingerprint="benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(job, Path(tmp) / "checkpoint.pt", callbacks=[losses])
        started = time.perf_counter()
        trainer.fit()
    return losses.windows, time.perf_counter() - started


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

    cache = args.cache / f"n{args.per_module}-r{args.rows_per_shard}-s{args.seed}"
    generate_sample(cache, args.modules, args.per_module, args.rows_per_shard, args.seed)
    datasets = open_sample(cache, args.modules)
    vocab = build_vocab(list(datasets.values()))
    rows, module_of = all_rows(datasets)
    config = train_config(args)
    print(f"{len(rows)} problems, {len(datasets)} datasets, {sum(len(d.files) for d in datasets.values())} shards; "
          f"batch {config.batch_size}, Adam lr {config.lr}, clip {config.grad_clip}, {args.threads} thread(s)")

    mix = {"reference": batch_mix(reference_batches(rows, config.batch_size, args.seed), vocab.collate, vocab,
                                  module_of)}
    job = TrainJob(name="waste", seed=args.seed, model=resolve_model_config(ARCHS[args.archs[0]]), config=config,
                   files=trainer_files(datasets), vocab=vocab, data_fingerprint="benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        stream = Trainer(job, Path(tmp) / "none.pt").stream  # as the trainer builds it
        order = (f"pool_batches {config.pool_batches}" if config.batching == "pool"
                 else f"bucket_width {config.bucket_width}") + f", loss_weighting {config.loss_weighting}"
        order += ", packed" if config.packing else ""
        mix[f"trainer ({order})"] = batch_mix(iter(stream.next_rows, None), stream.collate, vocab, module_of)
    for name, m in mix.items():
        print(f"first 200 batches, {name}: {m['padding_waste']:.1%} padded positions, "
              f"{m['modules_per_batch']:.1f} modules per batch", flush=True)

    report = {"label": args.label, "argv": sys.argv[1:], "problems": len(rows), "datasets": len(datasets),
              "train": dataclasses.asdict(config), "batches": mix, "results": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
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
                atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")  # after every run
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    if report["results"]:
        print_table(report["results"], args.window)
    print(f"-> {args.out}")


def print_table(results: list[dict], window: int) -> None:
    n = max(len(r["window_loss"]) for r in results)
    print("\n| model | arch | stream | " + " | ".join(str(window * (i + 1)) for i in range(n)) + " | s |")
    print("|---|---|---|" + "---|" * (n + 1))
    for r in results:
        print(f"| {r['model']} | {r['arch']} | {r['stream']} | "
              + " | ".join(f"{w:.3f}" for w in r["window_loss"]) + f" | {r['seconds']:.0f} |")


if __name__ == "__main__":
    main()
