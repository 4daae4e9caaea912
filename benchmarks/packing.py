"""Padding and stream rate of packed batches against padded ones, per batch order, on the real sample.

For each batch order (random batches, and pools of 4 and 16 length-sorted batches) the project's own
BatchStream draws `--batches` batches of `--batch-size` problems from the real generator's sample of
every training module (learning.py's cache), collated padded (`train.packing: false`) and packed
(`true`, data/packing.py). Per order and layout: the share of computed positions that are padding, the
rows and widths per batch, and the stream's samples/s on this one thread (reading, mixing, sorting,
collating or packing: what the prefetching thread can feed a step). Prints a table, writes JSON.

    python -m benchmarks.packing                          # batch 1024, paper.yaml's order and the others
    python -m benchmarks.packing --batch-size 64 --batches 100
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tprepro.data.batching import BatchStream
from tprepro.data.packing import pack
from tprepro.experiments.mathematics.modules import TRAIN_MODULES

from benchmarks.kit.report import markdown_table, stamp, write_report
from benchmarks.kit.sample import REPO, training_sample


def measure(files, vocab, batch_size: int, pool_batches: int, packing: bool, batches: int) -> dict:
    collate = (lambda rows: pack(rows, vocab)) if packing else None
    stream = iter(BatchStream(files, vocab, batch_size, 8, seed=1, shuffle_buffer=16384, read_rows=1024,
                              pool_batches=pool_batches, collate=collate))
    next(stream)  # the readers' first chunks
    real = positions = 0
    rows, widths = [], []
    started = time.perf_counter()
    for _ in range(batches):
        batch = next(stream)
        real += batch.n_tokens + int((batch.src != vocab.pad_id).sum())
        positions += batch.positions
        rows.append(batch.src.shape[0])
        widths.append((batch.src.shape[1], batch.tgt_in.shape[1]))
    seconds = time.perf_counter() - started
    return {"pool_batches": pool_batches, "packing": packing, "padding_share": 1 - real / positions,
            "rows_per_batch": statistics.fmean(rows), "source_width": statistics.fmean(w for w, _ in widths),
            "target_width": statistics.fmean(w for _, w in widths), "stream_samples_per_s": batches * batch_size / seconds}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--pool-batches", type=int, nargs="+", default=[1, 4, 16], help="1: random batches")
    parser.add_argument("--modules", nargs="+", default=list(TRAIN_MODULES))
    parser.add_argument("--per-module", type=int, default=300)
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/learning_data")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/packing.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    datasets, vocab = training_sample(args.cache, args.per_module, 100, 1, args.modules)
    files = [d.files for d in datasets.values()]
    results = [measure(files, vocab, args.batch_size, pool, packing, args.batches)
               for pool in args.pool_batches for packing in (False, True)]
    report = {"batch_size": args.batch_size, "batches": args.batches, "datasets": len(datasets), **stamp(),
              "results": results}
    write_report(args.out, report, indent=1)
    print(markdown_table(
        ["batch order", "layout", "padding", "rows per batch", "source x target width", "stream samples/s"],
        [["random batches" if r["pool_batches"] == 1 else f"pools of {r['pool_batches']}",
          "packed" if r["packing"] else "padded", f"{r['padding_share']:.1%}", f"{r['rows_per_batch']:.0f}",
          f"{r['source_width']:.0f} x {r['target_width']:.0f}", f"{r['stream_samples_per_s']:,.0f}"] for r in results]))
    print(f"-> {args.out}")
    return results


if __name__ == "__main__":
    main()
