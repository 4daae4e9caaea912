"""Greedy decoding speed with and without the decoder's K/V caches.

    python -m benchmarks.decode --preset tp_transformer_tiny --batch-sizes 1 32 --max-len 30

Builds a randomly initialised model from a preset, decodes a random batch (or the
token ids in --src, one source per line) both ways, checks that the predictions are
identical, prints a table and writes it as JSON to --out (atomically).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from tprepro.evaluate.decode import greedy_decode
from tprepro.models import build_model, list_presets, resolve_model_config

from benchmarks.kit.report import stamp, write_report

PAD, BOS, EOS = 0, 1, 2
COLUMNS = {  # JSON key: table heading
    "batch_size": "batch",
    "src_len": "src len",
    "max_len": "max len",
    "out_len": "out len",
    "cached_ms": "cached ms",
    "uncached_ms": "uncached ms",
    "speedup": "speed-up",
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tp_transformer_tiny", choices=sorted(list_presets()))
    parser.add_argument("--vocab-size", type=int, default=72, help="the paper's character vocabulary")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32, 256])
    parser.add_argument("--src-len", type=int, default=64, help="random source length")
    parser.add_argument("--src", help="file of whitespace-separated token ids, one source per line")
    parser.add_argument("--max-len", type=int, default=30, help="answer length limit (the paper's is 30)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per setting; the median is reported")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (1: stable timings)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/benchmarks/decode.json")
    return parser.parse_args()


def given_sources(path: str) -> torch.Tensor:
    rows = [[int(token) for token in line.split()] for line in open(path, encoding="utf-8") if line.strip()]
    src = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)  # [B, S]
    for i, row in enumerate(rows):
        src[i, : len(row)] = torch.tensor(row)
    return src


def time_decode(model, src: torch.Tensor, max_len: int, use_cache: bool, repeats: int) -> tuple[float, torch.Tensor]:
    """Median milliseconds per batch (after one warm-up run) and the predictions."""
    out = greedy_decode(model, src, BOS, EOS, max_len, use_cache)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        greedy_decode(model, src, BOS, EOS, max_len, use_cache)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = build_model(resolve_model_config(args.preset, {}), args.vocab_size, PAD).eval()
    if args.src:
        batches = [given_sources(args.src)]
    else:  # random symbols other than pad/bos/eos
        batches = [torch.randint(3, args.vocab_size, (size, args.src_len)) for size in args.batch_sizes]

    rows = []
    print(f"{args.preset}, {args.threads} thread(s)")
    print(" ".join(f"{heading:>11}" for heading in COLUMNS.values()))
    for src in batches:
        cached_ms, cached = time_decode(model, src, args.max_len, True, args.repeats)
        uncached_ms, uncached = time_decode(model, src, args.max_len, False, args.repeats)
        if not torch.equal(cached, uncached):
            raise SystemExit(f"cached and uncached predictions differ for batch size {src.size(0)}")
        row = dict(
            batch_size=src.size(0),
            src_len=src.size(1),
            max_len=args.max_len,
            out_len=cached.size(1),
            cached_ms=round(cached_ms, 2),
            uncached_ms=round(uncached_ms, 2),
            speedup=round(uncached_ms / cached_ms, 2),
        )
        rows.append(row)
        print(" ".join(f"{row[key]:>11}" for key in COLUMNS))

    result = dict(
        **stamp(),
        preset=args.preset,
        vocab_size=args.vocab_size,
        threads=args.threads,
        repeats=args.repeats,
        machine=platform.machine(),
        rows=rows,
    )
    write_report(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
