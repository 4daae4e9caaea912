"""Learning curves: a fixed held-out sample scored at every checkpoint while a model trains.

At each checkpoint the sample's teacher-forced loss (mean per target token) and its
greedy exact match are logged to the training run as step metrics and kept in a CSV
beside the checkpoint, so that a resumed job continues the same curve; the finished
curve is copied next to model.pt, where the tables stages draw it.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import torch

from tprepro.data.shards import Dataset
from tprepro.io import atomic_path
from tprepro.train.callbacks import Callback
from tprepro.train.files import CURVE_FILE  # noqa: F401 (the curve's readers import it from here too)

CURVE_COLUMNS = ["step", "heldout_loss", "heldout_exact_match", "n"]


@dataclass(frozen=True)
class HeldOut:
    """What a training job scores at its checkpoints."""

    rows: list[tuple[str, str]]  # (question, answer), never trained on
    max_len: int  # longest answer greedy decoding produces
    batch_size: int = 64  # rows per scoring batch


def heldout_sample(datasets: Sequence[Dataset], size: int, seed: int) -> list[tuple[str, str]]:
    """`size` (question, answer) rows drawn evenly from the first shard of each dataset, seeded."""
    from tprepro.evaluate.evaluate import sample_rows

    return sample_rows(datasets, size, random.Random(f"{seed}:learning-curve"))


@torch.no_grad()
def heldout_loss(model: torch.nn.Module, codec, rows: Sequence[tuple[str, str]], batch_size: int) -> float:
    """Mean teacher-forced loss per target unit (token, or tuple) of `model` on `rows`, in any codec."""
    from tprepro.train.step import target_loss, unwrap

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        loss_sum, units = 0.0, 0
        for start in range(0, len(rows), batch_size):
            batch = codec.collate(rows[start : start + batch_size]).to(device)
            output = model(batch.src, batch.tgt_in)  # logits [B, T, V], or a model's own output
            loss_sum += float(target_loss(unwrap(model), output, batch.tgt_out, codec.pad_id, "sum"))
            units += batch.n_tokens
    finally:
        model.train(was_training)
    return loss_sum / max(units, 1)


@torch.no_grad()
def heldout_scores(model: torch.nn.Module, vocab, rows: Sequence[tuple[str, str]], batch_size: int,
                   max_len: int) -> dict[str, float]:
    """Mean token loss (teacher forcing) and greedy exact match of `model` on `rows`."""
    from tprepro.evaluate.evaluate import predict_ids

    was_training = model.training
    model.eval()
    try:
        loss = heldout_loss(model, vocab, rows, batch_size)
        outputs = predict_ids(model, vocab, [q for q, _ in rows], batch_size, max_len)
        correct = sum(vocab.exact_match(ids, answer) for ids, (_, answer) in zip(outputs, rows))
    finally:
        model.train(was_training)
    return {"heldout_loss": loss, "heldout_exact_match": correct / len(rows)}


def read_curve(path: Path) -> pd.DataFrame:
    from tprepro.io import read_checked_csv

    return read_checked_csv(path, CURVE_COLUMNS, "learning curve")


class LearningCurve(Callback):
    """Scores the held-out rows at every checkpoint; the curve lives in `path` (beside the
    checkpoint) and is copied to `export` when training ends."""

    def __init__(self, heldout: HeldOut, path: Path, export: Path, log_metrics: Callable[[dict, int], None]):
        self.heldout, self.path, self.export, self.log_metrics = heldout, Path(path), Path(export), log_metrics
        self.points: list[dict] = []
        self.trainer = None

    def on_train_start(self, trainer) -> None:
        """Keep the points of the run being resumed (up to its checkpoint's step); a fresh run starts empty."""
        self.trainer = trainer
        if trainer.step > 0 and self.path.is_file():
            self.points = [p for p in read_curve(self.path).to_dict("records") if p["step"] <= trainer.step]

    def on_checkpoint(self, step: int, path: Path) -> None:
        if self.points and self.points[-1]["step"] == step:
            return  # the final checkpoint of a run that ended on a periodic one
        from tprepro.train.step import unwrap

        heldout = self.heldout
        scores = heldout_scores(unwrap(self.trainer.model), self.trainer.job.vocab, heldout.rows,
                                heldout.batch_size, heldout.max_len)
        self.points.append({"step": step, **scores, "n": len(heldout.rows)})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.path) as tmp:
            pd.DataFrame(self.points, columns=CURVE_COLUMNS).to_csv(tmp, index=False, float_format="%.6f")
        self.log_metrics(scores, step)

    def on_train_end(self, summary: dict) -> None:
        self.export_curve()

    def export_curve(self) -> None:
        """Copy the curve beside the checkpoint to `export` (also for a finished run whose export was lost)."""
        if self.path.is_file():
            self.export.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(self.export) as tmp:
                shutil.copyfile(self.path, tmp)
