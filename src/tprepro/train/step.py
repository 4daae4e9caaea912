"""One optimiser step and what it is made of: the loss of a batch (a model's own target loss and auxiliary
terms included), the learning-rate schedule and the optimiser. The Trainer (train/trainer.py) runs them;
benchmarks and tests call them directly."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from tprepro.data.batching import Batch
from tprepro.errors import TpreproError
from tprepro.models.interfaces import AuxiliaryLoss, TargetLoss
from tprepro.params import TrainConfig


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model itself under DistributedDataParallel (`.module`) and torch.compile (`._orig_mod`)."""
    while True:
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module
        elif hasattr(model, "_orig_mod"):
            model = model._orig_mod
        else:
            return model


def target_loss(module: torch.nn.Module, output, tgt_out: torch.Tensor, pad_id: int, reduction: str) -> torch.Tensor:
    """The loss of `output` (logits [B, T, V], or a model's own output) against `tgt_out`, summed or
    averaged ("sum" | "mean") over its non-pad target units; a `TargetLoss` model (e.g. the N2F models'
    tuple loss, Eq. 12 of TP-N2F) computes its own. `module` is the unwrapped model."""
    if isinstance(module, TargetLoss):
        return module.target_loss(output, tgt_out, reduction)
    return F.cross_entropy(output.flatten(0, 1), tgt_out.flatten(), ignore_index=pad_id, reduction=reduction)


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """`train.optimizer`: Adam (lr, betas) or torch's Adafactor (lr: the cap of its relative step size).
    Build it once the model is on its device (fused Adam on CUDA)."""
    if config.optimizer == "adafactor":
        return torch.optim.Adafactor(model.parameters(), lr=config.lr)
    if config.optimizer == "adam":  # on CUDA torch's fused kernel: one launch for every parameter's update
        fused = all(p.is_cuda for p in model.parameters()) or None
        return torch.optim.Adam(model.parameters(), lr=config.lr, betas=tuple(config.betas), fused=fused)
    raise TpreproError(f"train.optimizer: unknown optimizer {config.optimizer!r}; known: adam, adafactor")


def scheduled_lr(config: TrainConfig, step: int) -> float:
    """The learning rate of 0-based `step`: linear warm-up over `warmup_steps`, then constant; with
    `schedule: inverse_sqrt` decaying as 1/sqrt(step) from its peak at the end of the warm-up; with
    `schedule: cosine` following half a cosine from that peak to 0 at `steps`."""
    warmup, n = config.warmup_steps, step + 1
    if config.schedule == "inverse_sqrt":
        return config.lr * (min(n / warmup, math.sqrt(warmup / n)) if warmup else 1.0 / math.sqrt(n))
    if n <= warmup:
        return config.lr * n / warmup
    if config.schedule == "cosine":
        progress = min(1.0, (n - warmup) / max(1, config.steps - warmup))  # 0 after warm-up .. 1 at the end
        return config.lr * 0.5 * (1.0 + math.cos(math.pi * progress))
    return config.lr


def batch_loss(model: torch.nn.Module, batch: Batch, pad_id: int, token_weight: float | None = None,
               amp: bool = False) -> torch.Tensor:
    """The loss of `batch`: the mean over its target tokens, or with `token_weight` (data-parallel ranks:
    world size / global-batch tokens) that weight times the summed token loss of this slice, so that once
    DDP averages the gradients they are the single-process gradient of the global batch. `amp` runs
    forward and loss under bf16 autocast.

    A model whose targets are not token sequences implements `TargetLoss`, and one
    with loss terms of its own (e.g. ACT's ponder cost) `AuxiliaryLoss`
    (models/interfaces.py); both are found through DDP / torch.compile wrappers.
    """
    with torch.autocast(batch.src.device.type, dtype=torch.bfloat16, enabled=amp):
        packed = () if batch.segments is None else (batch.segments,)  # packed rows (data/packing.py)
        output = model(batch.src, batch.tgt_in, *packed)  # logits [B, T, V], or a model's own output
        module = unwrap(model)
        loss = (target_loss(module, output, batch.tgt_out, pad_id, "mean") if token_weight is None
                else token_weight * target_loss(module, output, batch.tgt_out, pad_id, "sum"))
        if isinstance(module, AuxiliaryLoss):
            loss = loss + module.auxiliary_loss()
    return loss


def optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: Batch,
                   pad_id: int, grad_clip: float, token_weight: float | None = None,
                   amp: bool = False) -> torch.Tensor:
    """Forward, loss (`batch_loss`), backward, clip, update: the hot path (benchmarks/train_speed.py times it)."""
    loss = batch_loss(model, batch, pad_id, token_weight, amp)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.detach()
