"""Training throughput of the Transformer, the TP-Transformer and the N2F models on the real hot path.

Times `tprepro.train.trainer.optimizer_step` (forward, loss, backward, clip,
Adam) on fixed-length random batches and reports samples/s, tokens/s and
model-FLOPs utilisation: FLOPs of one step counted by torch's FlopCounterMode,
divided by the step time and by a matmul peak measured on this machine.

    python -m benchmarks.train_throughput --presets transformer_tiny tp_transformer_tiny
    python -m benchmarks.train_throughput --presets tp_n2f_mathqa lstm2lstm_mathqa --src-len 40 --tgt-len 10

N2F presets get MathQA-sized vocabularies (N2F_SIZES) and programs of `tgt-len` tuples.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from tprepro.data.batching import Batch
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import arch_task, build_model, count_parameters
from tprepro.train.throughput import matmul_peak, synchronize
from tprepro.train.device import pick_device
from tprepro.train.step import optimizer_step

from benchmarks.kit.report import stamp, write_report

PAD, VOCAB = 0, 72  # the paper's 72 symbols
N2F_SIZES = {"vocab_size": 6000, "n_relations": 55, "n_arguments": 70}  # MathQA dev: 5,999 words, 51 / 70


def random_batch(batch_size: int, src_len: int, tgt_len: int, device: torch.device) -> Batch:
    src = torch.randint(4, VOCAB, (batch_size, src_len), device=device)  # [B, S]
    tgt = torch.randint(4, VOCAB, (batch_size, tgt_len + 1), device=device)  # [B, T+1]
    return Batch(src, tgt[:, :-1], tgt[:, 1:], n_tokens=batch_size * tgt_len)


def random_tuple_batch(batch_size: int, src_len: int, tgt_len: int, arity: int, device: torch.device) -> Batch:
    """Words and programs of `tgt_len` tuples with ids past the reserved ones."""
    src = torch.randint(2, N2F_SIZES["vocab_size"], (batch_size, src_len), device=device)  # [B, S]
    relations = torch.randint(3, N2F_SIZES["n_relations"], (batch_size, tgt_len + 1, 1), device=device)
    arguments = torch.randint(2, N2F_SIZES["n_arguments"], (batch_size, tgt_len + 1, arity), device=device)
    tgt = torch.cat([relations, arguments], dim=-1)  # [B, T+1, 1+K]
    return Batch(src, tgt[:, :-1], tgt[:, 1:], n_tokens=batch_size * tgt_len)


def measure(preset: str, args, device: torch.device, peak: float) -> dict:
    torch.manual_seed(0)
    cfg = resolve_model_config(preset, {"dropout": 0.0})
    if arch_task(cfg.arch) == "n2f":
        model = build_model(cfg, pad_id=PAD, **N2F_SIZES)
        batch = random_tuple_batch(args.batch_size, args.src_len, args.tgt_len, cfg.family.tuple_arity, device)
    else:
        model = build_model(cfg, VOCAB, PAD)
        batch = random_batch(args.batch_size, args.src_len, args.tgt_len, device)
    model = model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.995))
    step = lambda: optimizer_step(model, optimizer, batch, PAD, 0.1)

    with FlopCounterMode(display=False) as counter:
        step()
    flops = counter.get_total_flops()
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    tokens = args.batch_size * (args.src_len + args.tgt_len)
    return {
        "preset": preset,
        "parameters": count_parameters(model),
        "ms_per_step": 1000 * seconds,
        "samples_per_s": args.batch_size / seconds,
        "tokens_per_s": tokens / seconds,
        "gflops_per_step": flops / 1e9,
        "mfu": flops / seconds / peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["transformer_tiny", "tp_transformer_tiny"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--src-len", type=int, default=48, help="question length incl. start/end")
    parser.add_argument("--tgt-len", type=int, default=8, help="answer length incl. end (N2F: tuples)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps (median reported)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default="results/benchmarks/train_throughput.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)

    peak = matmul_peak(device, torch.float32, n=1024)
    rows = [measure(preset, args, device, peak) for preset in args.presets]

    print(f"device {device}, torch threads {torch.get_num_threads()}, matmul peak {peak / 1e9:.1f} GFLOP/s; "
          f"batch {args.batch_size}, src {args.src_len}, tgt {args.tgt_len}")
    print(f"{'preset':<24}{'params':>12}{'ms/step':>10}{'samples/s':>12}{'tokens/s':>12}{'GFLOP/step':>12}{'MFU':>8}")
    for r in rows:
        print(f"{r['preset']:<24}{r['parameters']:>12,}{r['ms_per_step']:>10.1f}{r['samples_per_s']:>12.1f}"
              f"{r['tokens_per_s']:>12.0f}{r['gflops_per_step']:>12.3f}{r['mfu']:>8.1%}")

    body = {**stamp(device), "device": str(device), "threads": torch.get_num_threads(), "matmul_peak_flops": peak,
            "config": {k: v for k, v in vars(args).items() if k != "out"}, "results": rows}
    out = write_report(Path(args.out), body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
