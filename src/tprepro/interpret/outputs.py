"""What every interpretation stage shares: loading a trained model the way evaluation does, writing
its tables, attention maps, and logging an output directory to the model's training run in MLflow.
The stages themselves belong to the experiments (experiments/<name>/interpret.py)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tprepro.evaluate.evaluate import load_trained
from tprepro.interpret.attention_maps import as_records, attention_figure, attention_maps, has_attention_maps
from tprepro.io import atomic_write_text
from tprepro.pipeline import MODEL_FILE, read_train_metrics, tracked_run

TINY_NOTE = "tiny CPU model: expect little structure"
CPU = torch.device("cpu")  # small samples: the analyses run on the CPU wherever the model trained


def load_for_analysis(model_dir: Path):
    """(model on the CPU, its codec, its train_metrics.json summary)."""
    summary = read_train_metrics(model_dir)
    model, vocab, _ = load_trained(model_dir / MODEL_FILE, CPU)
    return model, vocab, summary


def write_table(frame, path: Path) -> None:
    atomic_write_text(path, frame.to_csv(index=False))


def log_outputs(tracked, summary: dict, out: Path, metrics: dict[str, float]) -> None:
    """Every file of `out` as an artifact (under interpret/) of the model's training run in the MLflow
    experiment `tracked` (tprepro.tracking.store.Experiment), plus `metrics`."""
    run = tracked_run(tracked, summary)
    if metrics:
        run.log_metrics(metrics, step=summary["steps"])
    for path in sorted(out.iterdir()):
        run.log_artifact(path, f"interpret/{out.name}")
    run.finish()


def write_attention(model, vocab, rows, head: int, tmp: Path, title: str, done: list[str]) -> None:
    """Attention maps into `tmp`, for models built of multi-head attention."""
    if not has_attention_maps(model):
        return
    maps = attention_maps(model, vocab, rows, head)
    atomic_write_text(tmp / "attention.json", json.dumps(as_records(maps)) + "\n")
    attention_figure(maps, tmp / "attention.png", title)
    done.append("attention")


def markdown_table(frame) -> str:
    """A pipe table of `frame`, floats to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"
