"""Checkpoint and model files: atomic, hashed, and loaded without unpickling code.

A file holds `{"format": FORMAT, "sha256": <hex>, "payload": <uint8 tensor>}`:
the payload is the `torch.save` bytes of the real contents and `sha256` their
digest. Loading checks the digest, then unpacks the payload; both loads use
`weights_only=True`, so only tensors and plain Python values (dicts, lists,
tuples, numbers, strings) come back and a pickle payload is refused, never run.
A crash mid-write never leaves a truncated file (tprepro.io.atomic_path).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from tprepro.errors import TpreproError
from tprepro.io import atomic_path

FORMAT = "tprepro-checkpoint/1"


class CheckpointError(TpreproError):
    """A checkpoint or model file that cannot be trusted: missing, corrupt, foreign or unsafe."""


@dataclass
class TrainState:
    """What a training checkpoint holds: everything an exact resume needs (tests/train/test_trainer.py)."""

    fingerprint: str  # TrainJob.fingerprint: the settings, vocabulary and data it was trained under
    step: int  # optimiser steps taken
    model: dict  # state_dict
    optimizer: dict  # state_dict
    ranks: list  # per data-parallel rank that wrote it: (CPU RNG state, its share of the open window's loss)
    stream: Any  # the batch stream's position after the last batch trained on (data/batching.py)
    target_tokens: int = 0  # target tokens trained on (train.loss_weighting: token)
    log_window: dict = field(default_factory=dict)  # LogWindow.saved(): the open logging window's counts
    last_metrics: dict = field(default_factory=dict)  # the last logged window's metrics
    summary: dict | None = None  # at the final step: the run's summary, so a re-invoked finished run reports it
    extra: dict = field(default_factory=dict)  # TrainJob.extra (the MLflow run id, its settings digest)

    @classmethod
    def read(cls, path: str | Path) -> "TrainState":
        """The state in the checkpoint file `path` (CheckpointError if it cannot be trusted); keys that
        checkpoints from before a field existed lack take the field's default."""
        contents = load_checkpoint(path)
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{key: value for key, value in contents.items() if key in known})
        except TypeError as exc:
            raise CheckpointError(f"{path}: not a training checkpoint ({exc})") from exc

    def write(self, path: str | Path) -> None:
        save_checkpoint({f.name: getattr(self, f.name) for f in fields(self)}, path)  # no copy of the tensors


def save_checkpoint(payload: dict, path: str | Path) -> None:
    """Write `payload` to `path` atomically; a write failure (disk full, file too large, read-only)
    raises TpreproError naming the file and the cause, and leaves no partial file."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    wrapped = {"format": FORMAT, "sha256": hashlib.sha256(body).hexdigest(),
               "payload": torch.frombuffer(bytearray(body), dtype=torch.uint8)}
    file = io.BytesIO()
    torch.save(wrapped, file)  # serialised in memory: a failing disk then raises OSError, named by atomic_path
    with atomic_path(path) as tmp:
        tmp.write_bytes(file.getbuffer())


def _safe_load(source, path: Path, what: str):
    try:
        return torch.load(source, map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path}: checkpoint not found") from exc
    except Exception as exc:  # UnpicklingError (unsafe content), RuntimeError (truncated zip), ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "weights only load failed" in str(exc).lower() or "unsupported global" in str(exc).lower():
            raise CheckpointError(f"{path}: refused: {what} holds objects other than tensors and plain "
                                  f"values (a pickle payload?); it was not loaded") from exc
        raise CheckpointError(f"{path}: unreadable checkpoint ({first[:300]})") from exc


def load_checkpoint(path: str | Path) -> dict:
    """The contents of a file written by `save_checkpoint`, verified; CheckpointError naming `path` if not."""
    path = Path(path)
    outer = _safe_load(path, path, "the file")
    if not (isinstance(outer, dict) and outer.get("format") == FORMAT
            and isinstance(outer.get("payload"), torch.Tensor) and isinstance(outer.get("sha256"), str)):
        raise CheckpointError(f"{path}: not a {FORMAT} file (no content hash; written by another "
                              f"program or an older tprepro): retrain to rewrite it")
    body = outer["payload"].numpy().tobytes()
    digest = hashlib.sha256(body).hexdigest()
    if digest != outer["sha256"]:
        raise CheckpointError(f"{path}: corrupt checkpoint: content sha256 {digest[:16]}... differs from the "
                              f"recorded {outer['sha256'][:16]}...")
    payload = _safe_load(io.BytesIO(body), path, "the payload")
    if not isinstance(payload, dict):
        raise CheckpointError(f"{path}: unreadable checkpoint (payload is {type(payload).__name__}, not a dict)")
    return payload
