"""torch.compile for training: one graph for every batch length, and compiled code kept where a requeue finds it.

Batches differ in their padded source and target lengths. Marked as dynamic dimensions before the first
step, the lengths are symbols of one graph from the start, instead of a graph for the first shape and a
recompile when the next one differs (Dynamo's automatic dynamic shapes); tests/train/test_compiling.py
counts the graphs over a real batch stream. Inductor's caches (compiled kernels, FX graphs, AOTAutograd)
go beside the checkpoint, on the storage a requeued SLURM job resumes from, so its compile is a cache hit.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch._dynamo

from tprepro.data.batching import Batch

CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


def compile_cache_dir(checkpoint_path: Path) -> Path:
    """Where a training job's compiled code is kept: `compile-cache/` beside its checkpoint."""
    return Path(checkpoint_path).parent / "compile-cache"


def compile_model(model: torch.nn.Module, cache_dir: Path | None, backend: str = "inductor") -> torch.nn.Module:
    """`torch.compile(model)` with Inductor's caches in `cache_dir` (unless $TORCHINDUCTOR_CACHE_DIR is set)."""
    if cache_dir is not None and CACHE_VARIABLE not in os.environ:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        os.environ[CACHE_VARIABLE] = str(cache_dir)
    return torch.compile(model, backend=backend)


def mark_dynamic_lengths(batch: Batch) -> Batch:
    """Mark the source and target lengths (dim 1) of `batch` as dynamic for the compiled model, and for a
    packed batch (rows vary from step to step) the rows (dim 0) too; returns it."""
    dims = (1,) if batch.segments is None else (0, 1)
    for tensor in batch.tensors():
        for dim in dims:
            torch._dynamo.maybe_mark_dynamic(tensor, dim)
    return batch
