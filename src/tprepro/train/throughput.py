"""Model-FLOPs utilisation: FLOPs of a training step per position, and the matmul peak they are set against.

MFU on real tokens = FLOPs per position x non-pad positions per second / peak; on padded shapes the
same with every position the step computes. The FLOPs of one step (forward, loss and backward; the
optimiser's elementwise update is not model work) are counted by torch's FlopCounterMode on a few rows
of a real batch, so every architecture is counted by the same rule, attention and recurrences included.
The peak is measured where the model trains: the best rate of a large matmul in the step's dtype (bf16
under autocast, else fp32), as nanoGPT and PaLM set model FLOPs against a hardware peak.
"""

from __future__ import annotations

import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from tprepro.data.batching import Batch
from tprepro.models.attention import masks_of_kind

PROBE_ROWS = 4  # rows of the first batch whose step is counted: FLOPs grow linearly with rows


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int | None = None, repeats: int = 10) -> float:
    """Best FLOP/s of an n x n matmul in `dtype` on `device` (n: 8192 on CUDA, 512 on CPU)."""
    n = n or (8192 if device.type == "cuda" else 512)
    a = torch.full((n, n), 0.5, device=device, dtype=dtype)  # no random numbers: training's RNG stays as it was
    b = torch.full((n, n), 0.25, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(repeats + 1):  # the first warms up
        synchronize(device)
        started = time.perf_counter()
        a @ b
        synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2 * n**3 / best


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_flops(loss_of, model: torch.nn.Module, batch: Batch) -> int:
    """FLOPs of forward, loss and backward of `model` on `batch`; `loss_of(model, batch)` returns the loss.
    A packed batch is counted with dense masks: FlopCounterMode cannot run FlexAttention's higher-order op
    (TypeError, torch 2.11 on an H100 and 2.13 on CPU), and both compute the same attention. Leaves no
    gradients and the RNG states (dropout) as it found them."""
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        with masks_of_kind(flex=False), FlopCounterMode(display=False) as counter:
            loss_of(model, batch).backward()
        return counter.get_total_flops()
    finally:
        model.zero_grad(set_to_none=True)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


def flops_per_position(loss_of, model: torch.nn.Module, batch: Batch) -> float:
    """FLOPs of a training step per position (source + target, padding included), counted on the first
    PROBE_ROWS rows of `batch` at its padded lengths."""
    probe = batch.map(lambda t: t[:PROBE_ROWS])
    return step_flops(loss_of, model, probe) / probe.positions
