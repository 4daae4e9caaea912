"""The paper configurations at the device's speed: the project's Trainer on real data, measured end to end.

For each preset the real `Trainer` (its batch stream and batch order, background prefetching, bf16 autocast
and torch.compile on CUDA, fused Adam) trains on a real sample for `--steps` steps, logging every `--window`
steps, and its greedy cached decoder answers held-out problems. Per preset it reports:

- samples/s (median of the windows after the first, which holds the compile), and the time to step 100 from
  the trainer's construction (model build and compilation included);
- MFU on real tokens and on padded shapes (train/throughput.py: FlopCounterMode FLOPs per position over a
  matmul peak measured in the step's dtype in the same run), the padding share, and the share of step time
  spent waiting for the next batch;
- the batch stream's own rate on one thread (what prefetching can feed), the graphs Dynamo compiled (1 = no
  recompile), peak memory, the last window's loss, decoding problems/s (and the paper evaluation's 710,000 problems
  in minutes at that rate);
- with `--requeue`, the seconds a fresh process with the same compile cache takes to its first step.

One JSON per preset and device kind, `results/benchmarks/throughput/<device_kind>/<preset>.json` (the speeds
`tprepro plan` reads), and a table.

    python -m benchmarks.train_speed --params workflow/configs/paper.yaml --requeue        # one GPU: paper presets, batch 1024
    python -m benchmarks.train_speed --pool-batches 1 --packing   # random batches, packed rows (<preset>-packed.json)
    python -m benchmarks.train_speed --presets transformer_tiny tp_transformer_tiny --batch-size 32 --steps 50   # CPU

Data: Mathematics presets train on the real generator's sample (benchmarks.kit.sample, the learning benchmark's
cache: every training module and difficulty, `--per-module` problems each); two-variable presets on the project's
two-variable data.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

from tprepro.data.batching import BatchStream
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.evaluate.evaluate import predict_ids
from tprepro.experiments.two_variable.data import write_two_variable
from tprepro.models.registry import resolve_model_config
from tprepro.params import TrainConfig
from tprepro.plan.speeds import THROUGHPUT_SCHEMA, write_throughput
from tprepro.train.throughput import synchronize
from tprepro import training

from benchmarks.kit.overrides import given, params_train
from benchmarks.kit.report import device_kind, stamp
from benchmarks.kit.runner import Recorder, preset_run
from benchmarks.kit.sample import REPO, all_rows, training_sample
PAPER_EVALUATION = 10_000 * 71  # problems: Schlag et al. score 10,000 per module split, 71 splits
PRESETS = {"mathematics": ["transformer_paper", "tp_transformer_paper"], "two_variable": ["wangperawong_ut"]}


# ---- data ------------------------------------------------------------------------------------------
def mathematics_data(args, _scratch: Path) -> tuple[dict, object, list[str]]:
    """(datasets, vocabulary, held-out questions) of one real Mathematics sample."""
    datasets, vocab = training_sample(args.cache, args.per_module, max(1, args.per_module // 3), 1, args.modules)
    rows, _ = all_rows(datasets)
    return datasets, vocab, [q for q, _ in rows[:512]]


def two_variable_data(args, folder: Path) -> tuple[dict, object, list[str]]:
    """The two-variable problems of Wangperawong's Table 3, written by the project's generator."""
    splits = write_two_variable(folder, seed=1, size=args.per_module * 100, test_fraction=0.1,
                                rows_per_shard=max(1, args.per_module * 10))
    train, test = open_dataset(splits["train"]), open_dataset(splits["test"])
    return {"train": train}, build_vocab([train, test]), [row["question"] for row in iter_rows(test)][:512]


DATA = {"mathematics": mathematics_data, "two_variable": lambda args, scratch: two_variable_data(args, scratch / "2v")}


# ---- one preset ------------------------------------------------------------------------------------
def train_config(args) -> TrainConfig:
    """The params file's `train:` (with the experiment's own `train:` overrides), set to this run's length."""
    return dataclasses.replace(params_train(args.params, args.experiment), steps=args.steps, packing=args.packing,
                               log_every=args.window, checkpoint_every=args.steps, device=args.device,
                               threads=args.threads, processes=1,
                               **given(batch_size=args.batch_size or None, pool_batches=args.pool_batches or None))


def stream_rate(files, vocab, config: TrainConfig, collate, batches: int = 20) -> float:
    """Samples/s of the batch stream alone (read, shuffle, sort, collate or pack) on this thread: the rate
    the prefetching thread can feed a step at, to set against the step's own."""
    stream = iter(BatchStream(files, vocab, config.batch_size, config.bucket_width, seed=1,
                              shuffle_buffer=config.shuffle_buffer, read_rows=config.read_rows,
                              batching=config.batching, pool_batches=config.pool_batches, collate=collate))
    next(stream)  # the readers' first chunks
    started = time.perf_counter()
    for _ in range(batches):
        next(stream)
    return batches * config.batch_size / (time.perf_counter() - started)


def measure(preset: str, datasets, vocab, questions: list[str], args, cache_dir: Path) -> dict:
    """Train `preset` through the real Trainer and decode; the schema's figures."""
    config = train_config(args)
    run = preset_run(preset, 1, resolve_model_config(preset), config, datasets, vocab)
    job = training.training_job(run)
    torch._dynamo.reset()
    counters.clear()
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    recorder = Recorder(started=time.perf_counter())  # from the trainer's construction: model build and compile
    trainer = training.trainer(run, [recorder], job=job, folder=cache_dir / preset)
    trainer.fit()
    windows = [{"step": w["step"], "at_s": w["seconds"],
                **{k: v for k, v in w.items() if k not in ("step", "seconds", "cpu_seconds")}} for w in recorder.logged]
    steady = windows[1:] or windows
    median = lambda key: statistics.median(w[key] for w in steady)  # noqa: E731
    at_100 = next((w["at_s"] for w in windows if w["step"] >= 100), None)
    real_per_sample = statistics.fmean(w["tokens_per_s"] / w["samples_per_s"] for w in steady)
    result = {
        "schema": THROUGHPUT_SCHEMA, "preset": preset, "arch": job.model.arch, "device_kind": device_kind(trainer.device),
        "task": args.experiment,  # whose data it trained on: the plan prices only that task's trainings with it
        **stamp(trainer.device),
        "batch_size": config.batch_size, "precision": "bf16" if trainer.amp else "fp32", "compile": trainer.compiled,
        "threads": torch.get_num_threads() if trainer.device.type == "cpu" else None, "steps": config.steps,
        "batching": config.batching, "pool_batches": config.pool_batches, "prefetch": config.prefetch,
        "packing": config.packing,
        "samples_per_s": median("samples_per_s"), "step_s": config.batch_size / median("samples_per_s"),
        "flops_per_sample": trainer.flops_per_position * real_per_sample, "real_tokens_per_sample": real_per_sample,
        "mfu_real": median("mfu_real"), "mfu_padded": median("mfu_padded"), "peak_flops": trainer.peak_flops,
        "padding_share": median("padding_share"), "data_wait_share": median("data_wait_share"),
        "stream_samples_per_s": stream_rate(job.files, vocab, config, trainer.stream.collate),
        "seconds_to_step_100": at_100, "recompiles": max(0, counters["stats"]["unique_graphs"] - 1)
        if trainer.compiled else None, "dynamo_graphs": counters["stats"]["unique_graphs"] if trainer.compiled else None,
        "peak_memory_bytes": peak_memory(trainer.device), "final_loss": windows[-1]["loss"],
        "decode_problems_per_s": decode_rate(trainer.model, vocab, questions, args.decode_batch),
        "windows": windows,
    }
    rate = result["decode_problems_per_s"]
    result["paper_evaluation_minutes"] = PAPER_EVALUATION / rate / 60 if rate else None
    return result


def peak_memory(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the process's resident peak


def decode_rate(model, vocab, questions: list[str], batch_size: int) -> float | None:
    """Greedy cached decoding of `questions` (answers up to 30 symbols, the paper's), problems/s."""
    if not questions or not hasattr(model, "encode"):
        return None
    device = next(model.parameters()).device
    predict_ids(model, vocab, questions[:batch_size], batch_size, 30)  # warm-up
    synchronize(device)
    started = time.perf_counter()
    predict_ids(model, vocab, questions, batch_size, 30)
    synchronize(device)
    return len(questions) / (time.perf_counter() - started)


def requeue_seconds(preset: str, args, work: Path) -> float:
    """Seconds from a fresh process's start to the end of its first step, with this run's compile cache."""
    command = [sys.executable, "-m", "benchmarks.train_speed", "--experiment", args.experiment, "--presets", preset, "--steps", "1",
               "--window", "1", "--params", str(args.params), "--per-module", str(args.per_module), "--cache",
               str(args.cache), "--device", args.device, "--first-step-only", "--work", str(work)]
    command += ["--batch-size", str(args.batch_size)] if args.batch_size else []
    command += ["--pool-batches", str(args.pool_batches)] if args.pool_batches else []
    command += ["--packing"] if args.packing else []
    command += ["--modules", *args.modules] if args.modules else []
    started = time.time()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)  # benchmarks: a package
    return json.loads(done.stdout.strip().splitlines()[-1])["first_step_done"] - started


# ---- main ------------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="mathematics", choices=sorted(DATA), help="whose data and train: settings")
    parser.add_argument("--presets", nargs="+", default=None, help="default: the experiment's paper presets")
    parser.add_argument("--params", type=Path, default=REPO / "workflow/configs/paper.yaml",
                        help="train: settings (batch size, batch order, optimiser) not set here")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--window", type=int, default=25, help="steps per logged window")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the params file's")
    parser.add_argument("--pool-batches", type=int, default=None, help="default: the params file's (1: random batches)")
    parser.add_argument("--packing", action="store_true", help="several problems per row (train.packing)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=0, help="CPU: torch threads (0: torch's default)")
    parser.add_argument("--per-module", type=int, default=300, help="problems per module and difficulty")
    parser.add_argument("--modules", nargs="+", default=None, help="Mathematics modules (default: all training)")
    parser.add_argument("--decode-batch", type=int, default=256)
    parser.add_argument("--requeue", action="store_true", help="also time a fresh process's first step")
    parser.add_argument("--first-step-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/learning_data")
    parser.add_argument("--out-dir", type=Path, default=REPO / "results/benchmarks/throughput")
    args = parser.parse_args(argv)
    args.presets = args.presets or PRESETS[args.experiment]
    return args


def first_step_only(args) -> None:
    """The requeue probe: one step in the compile cache of `--work`; prints when it was done (epoch seconds)."""
    datasets, vocab, _ = DATA[args.experiment](args, args.work)
    run = preset_run(args.presets[0], 1, resolve_model_config(args.presets[0]), train_config(args), datasets, vocab)
    training.trainer(run, folder=args.work / "requeued").fit()
    print(json.dumps({"first_step_done": time.time()}))


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    if args.first_step_only:
        return first_step_only(args)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "compile-cache"))  # the requeue probe's too
        for preset in args.presets:
            datasets, vocab, questions = DATA[args.experiment](args, work)
            result = measure(preset, datasets, vocab, questions, args, work)
            if args.requeue and result["compile"]:
                result["seconds_to_first_step_requeued"] = requeue_seconds(preset, args, work)
            out = write_throughput(result, args.out_dir, "packed" if args.packing else "")
            results.append(result)
            print_row(result, header=len(results) == 1)
            print(f"  -> {out}", flush=True)
    return results


def print_row(r: dict, header: bool) -> None:
    if header:
        print(f"{'preset':<22} {'device':>6} {'batch':>5} {'samples/s':>10} {'MFU real':>8} {'MFU pad':>8} "
              f"{'padding':>7} {'wait':>6} {'to 100':>7} {'graphs':>6} {'mem GB':>7} {'loss':>6} {'decode/s':>9} {'stream/s':>9}")
    fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
    print(f"{r['preset']:<22} {r['device_kind']:>6} {r['batch_size']:>5} {r['samples_per_s']:>10.1f} "
          f"{r['mfu_real']:>8.1%} {r['mfu_padded']:>8.1%} {r['padding_share']:>7.1%} {r['data_wait_share']:>6.1%} "
          f"{fmt(r['seconds_to_step_100'], '7.1f'):>7} {fmt(r['dynamo_graphs'], '6d'):>6} "
          f"{r['peak_memory_bytes'] / 1e9:>7.2f} {r['final_loss']:>6.3f} {fmt(r['decode_problems_per_s'], '9.1f'):>9} "
          f"{r['stream_samples_per_s']:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
