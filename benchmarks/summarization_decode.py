"""Summarization decoding speed: test documents per second by beam size (and with / without K/V caches).

    python -m benchmarks.summarization_decode --models summarization/models/xsum/* \
        --data data/summarization/xsum --beams 1 4 --documents 24

Loads each exported summarization model, beam-searches the first --documents test documents
of --data in batches of --batch-size, reports the median documents/s over --repeats timed runs
(after one warm-up run), checks that cached and uncached decoding give the same summaries,
prints a table and writes it as JSON to --out (atomically).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch

from tprepro.data.shards import iter_rows, open_dataset
from tprepro.experiments.summarization.decoding import beam_search
from tprepro.evaluate.evaluate import load_trained
from tprepro.experiments.summarization.tokenizer import SubwordCodec
from tprepro.train.files import MODEL_FILE

from benchmarks.kit.report import stamp, write_report


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, help="exported model directories (model.pt)")
    parser.add_argument("--data", required=True, help="the dataset's data directory (test/ inside)")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--documents", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-len", type=int, default=32, help="summary length limit in subwords")
    parser.add_argument("--length-penalty", type=float, default=0.6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (1: stable timings)")
    parser.add_argument("--out", default="results/benchmarks/summarization_decode.json")
    return parser.parse_args()


def decode_all(model, codec, documents, args, beam: int, use_cache: bool) -> list[list[int]]:
    out = []
    for start in range(0, len(documents), args.batch_size):
        src = codec.encode_documents(documents[start : start + args.batch_size])  # [B, S]
        out += beam_search(model, src, codec.bos_id, codec.eos_id, args.max_len, beam, args.length_penalty,
                           use_cache=use_cache)
    return out


def timed(model, codec, documents, args, beam: int, use_cache: bool) -> tuple[float, list[list[int]]]:
    """Median seconds over the repeats (after one warm-up run) and the summaries."""
    result = decode_all(model, codec, documents, args, beam, use_cache)
    times = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        decode_all(model, codec, documents, args, beam, use_cache)
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    rows = list(iter_rows(open_dataset(Path(args.data) / "test"), ("document",)))[: args.documents]
    documents = [r["document"] for r in rows]
    results = []
    for model_dir in args.models:
        model, codec, _ = load_trained(Path(model_dir) / MODEL_FILE, torch.device("cpu"))
        if not isinstance(codec, SubwordCodec):
            raise SystemExit(f"{model_dir}: not a summarization model (no sentencepiece codec)")
        for beam in args.beams:
            cached, summaries = timed(model, codec, documents, args, beam, use_cache=True)
            uncached, again = timed(model, codec, documents, args, beam, use_cache=False)
            if summaries != again:
                raise SystemExit(f"{model_dir}: beam {beam}: cached and uncached summaries differ")
            results.append({"model": Path(model_dir).name, "beam": beam, "documents": len(documents),
                            "mean_summary_tokens": sum(map(len, summaries)) / len(summaries),
                            "docs_per_s": len(documents) / cached, "docs_per_s_uncached": len(documents) / uncached})
    head = f"{'model':<14} {'beam':>4} {'docs':>5} {'mean len':>8} {'docs/s':>8} {'docs/s (no cache)':>18}"
    print(head)
    for r in results:
        print(f"{r['model']:<14} {r['beam']:>4} {r['documents']:>5} {r['mean_summary_tokens']:>8.1f} "
              f"{r['docs_per_s']:>8.1f} {r['docs_per_s_uncached']:>18.1f}")
    body = {**stamp(), "settings": {k: v for k, v in vars(args).items()}, "machine": platform.platform(),
            "torch": torch.__version__, "results": results}
    write_report(args.out, body)
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
