"""The training loop: Adam (or Adafactor) with gradient-norm clipping, streaming length-sorted batches,
atomic checkpoints every N steps, and exact resume.

A resumed run restores weights, optimiser moments, the step, the batch-stream
position, the torch RNG (dropout) and the open logging window, so it ends with
the same weights and logged metrics as an uninterrupted run. A checkpoint that
cannot be used is moved aside (`checkpoint.pt.<reason>-<UTC time>`, never
overwritten or deleted) with a warning naming both files, and training starts
from step 0 (or a kept finished state, below): `mismatch` (written under other settings, data or more steps) or
`corrupt` (content hash wrong, truncated, or not plain tensors and values).
A checkpoint at the final step is a finished run: `fit()` returns its summary
(last loss, timing) without training. A finished run's final state is kept
(train/kept_states.py), and a later run under the same settings resumes from
the furthest kept state within its steps when checkpoint.pt is not as far
(after `dvc exp apply` of a shorter run, say); checkpoint.pt is then moved
aside only if it is not itself a kept state. A non-finite loss or weight stops
training with `Diverged` before anything non-finite is written.

SIGTERM, SIGUSR1 or SIGINT (Ctrl-C) stop training at the next step boundary with a checkpoint
(train/preemption.py). With several processes (train/distributed.py) the model
is wrapped in DistributedDataParallel, each rank trains on its slice of the
global batch, and rank 0 alone writes checkpoints and reports to callbacks.
"""

from __future__ import annotations

import hashlib
import json
import math
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from tprepro.params import TrainConfig
from tprepro.params.train_config import fingerprinted
from tprepro.data.batching import Batch, BatchStream
from tprepro.data.packing import pack
from tprepro.data.vocab import Vocab
from tprepro.data.prefetch import Prefetcher, prefetch_depth
from tprepro.models.config import ModelConfig
from tprepro.models.interfaces import Codec
from tprepro.models.registry import build_model, count_parameters
from tprepro.errors import TpreproError
from tprepro.train.callbacks import Callback
from tprepro.train import kept_states
from tprepro.io import move_aside
from tprepro.train.checkpoint import CheckpointError, TrainState, save_checkpoint
from tprepro.train.device import pick_device, speed_paths
from tprepro.train.compiling import compile_cache_dir, compile_model, mark_dynamic_lengths
from tprepro.train.distributed import World, shard_batch
from tprepro.train.preemption import Preempted, PreemptionFlag
from tprepro.train.step import batch_loss, make_optimizer, optimizer_step, scheduled_lr
from tprepro.train.telemetry import LogWindow
from tprepro.train.throughput import flops_per_position, matmul_peak


@dataclass
class TrainJob:
    """Everything one training run needs; `fingerprint` identifies it for resuming."""

    name: str  # e.g. "tp_transformer-s1"
    seed: int
    model: ModelConfig
    config: TrainConfig
    files: Sequence[Sequence[Path]] | Sequence[Path]  # training shards per dataset (flat: one dataset)
    vocab: Codec  # the character Vocab, or any codec (models/interfaces.py)
    data_fingerprint: str  # hash over the shards' hashes
    extra: dict = field(default_factory=dict)  # carried into the checkpoint (e.g. the MLflow run id)

    @property
    def fingerprint(self) -> str:
        settings = {
            "seed": self.seed,
            "model": asdict(self.model),
            "train": fingerprinted(self.config),  # the settings a resumed run must share (params/train_config.py)
            "vocab": list(self.vocab.symbols),
            "data": self.data_fingerprint,
        }
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def packed_collate(job: TrainJob, model: torch.nn.Module):
    """`train.packing`: the stream's batches packed (data/packing.py), for a model and codec that take them."""
    if not getattr(model, "supports_packing", False):
        raise TpreproError(f"train.packing: the {job.model.arch} architecture cannot read packed rows; "
                           f"packing works for transformer and tp_transformer presets")
    if not isinstance(job.vocab, Vocab):
        raise TpreproError(f"train.packing: packs character problems; {type(job.vocab).__name__} batches "
                           f"are not packed")
    return lambda rows: pack(rows, job.vocab)


class Diverged(TpreproError):
    """A non-finite loss or weight: training stops; the last good checkpoint is kept."""


class Trainer:
    def __init__(self, job: TrainJob, checkpoint_path: Path, callbacks: Sequence[Callback] = (),
                 world: World | None = None, kept_with: Sequence[str] = ()):
        """`kept_with`: files a callback writes beside the checkpoint at each checkpoint (the learning
        curve), kept and restored with a finished state (train/kept_states.py)."""
        self.job = job
        self.kept_with = tuple(kept_with)
        self.name = job.name
        self.config = job.config
        self.checkpoint_path = Path(checkpoint_path)
        self.world = world or World()
        self.callbacks = list(callbacks) if self.world.is_main else []  # rank 0 reports
        self.device = pick_device(job.config.device, self.world.local_rank)
        self.amp, compile_ = speed_paths(job.config, self.device)
        if job.config.threads:
            torch.set_num_threads(job.config.threads)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.world.init(self.device)

        torch.manual_seed(job.seed)
        self.model = build_model(job.model, **job.vocab.model_sizes()).to(self.device)
        if self.world.distributed:
            torch.manual_seed(job.seed + self.world.rank)  # own dropout stream per rank
        self.optimizer = make_optimizer(self.model, job.config)
        self.step = 0
        self.last_metrics: dict[str, float] = {}
        self.resumed_from: int | None = None
        self.finished: dict | None = None  # the stored summary when the checkpoint is at the final step
        self.stream_state: dict | None = None
        self.target_tokens = 0  # target tokens trained on so far (loss_weighting: token)
        self.window = LogWindow()
        self._maybe_resume()
        self.stream = BatchStream(
            job.files, job.vocab, job.config.batch_size, job.config.bucket_width,
            seed=job.seed, shuffle_buffer=job.config.shuffle_buffer, read_rows=job.config.read_rows,
            state=self.stream_state, batching=job.config.batching, pool_batches=job.config.pool_batches,
            collate=packed_collate(job, self.model) if job.config.packing else None,
        )
        self.consumed_stream_state = self.stream.state_dict()  # where the batches trained on end
        self.net = self.model  # what the loop calls: the model, wrapped for DDP / compiled
        if self.world.distributed:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.compiled = compile_
        if compile_:
            self.net = compile_model(self.net, compile_cache_dir(self.checkpoint_path))
        self.flops_per_position: float | None = None  # of a training step (train/throughput.py), from the first batch
        self.peak_flops: float | None = None  # the device's matmul peak in the step's dtype, measured at the first log

    # ---- checkpoints -------------------------------------------------------------
    def _maybe_resume(self) -> None:
        """Resume from checkpoint.pt, or from a kept finished state (train/kept_states.py) that is
        further along under this job's fingerprint; a checkpoint.pt not resumed from is moved aside
        unless it is one of the kept states."""
        state = self._read(self.checkpoint_path)
        usable = state is not None and state.fingerprint == self.job.fingerprint and state.step <= self.config.steps
        kept = kept_states.furthest(self.checkpoint_path, self.job.fingerprint, self.config.steps)
        further = self._read(kept[1]) if kept is not None and kept[0] > (state.step if usable else -1) else None
        if further is not None and further.fingerprint == self.job.fingerprint:
            if state is not None:
                self._set_aside("superseded" if usable else "mismatch",
                                f"step {state.step}{' only' if usable else ', under other settings, data or more steps'}"
                                f"; training resumes from the kept finished state {kept[1]} (step {further.step} "
                                f"of {self.config.steps})")
            if self.world.is_main:
                kept_states.restore(kept[1], self.checkpoint_path)
            state, usable = further, True
        if state is None:
            return
        if not usable:
            self._set_aside("mismatch", f"written under other settings, data or more steps (step {state.step} of "
                                        f"{self.config.steps}); training restarts from step 0")
            return
        self.model.load_state_dict(state.model)
        self.optimizer.load_state_dict(state.optimizer)
        ranks = state.ranks  # per rank that wrote it: RNG state and share of the open window's loss
        rng, window_loss = ranks[self.world.rank] if self.world.rank < len(ranks) else ranks[0]
        torch.set_rng_state(rng)
        self.step = self.resumed_from = state.step
        self.stream_state = state.stream
        self.target_tokens = state.target_tokens
        self.window = LogWindow.restored(state.log_window, window_loss)
        self.last_metrics = dict(state.last_metrics)
        self.finished = state.summary if self.step == self.config.steps else None
        self.job.extra.update(state.extra)

    def _read(self, path: Path) -> TrainState | None:
        """The training state in `path`; None if there is none or it is corrupt (then moved aside, warning)."""
        if not path.is_file():
            return None
        try:
            return TrainState.read(path)
        except CheckpointError as exc:
            self.world.barrier()  # every rank has read (and rejected) it before rank 0 moves it
            if self.world.is_main:
                why = str(exc).removeprefix(f"{path}: ")
                move_aside(path, "corrupt", f"{why}; training does not resume from it")
            return None

    def _set_aside(self, reason: str, why: str) -> None:
        """checkpoint.pt is not resumed from: moved aside (once every rank has read it), unless it is a kept
        finished state, which the next checkpoint may replace (its kept file stays)."""
        self.world.barrier()
        if not self.world.is_main:
            return
        if kept_states.holds(self.checkpoint_path):
            print(f"[{self.name}] {self.checkpoint_path}: {why}; it stays kept in "
                  f"{kept_states.KEPT}/", file=sys.stderr, flush=True)
        else:
            move_aside(self.checkpoint_path, reason, why)

    def save_checkpoint(self, summary: dict | None = None) -> None:
        """Every rank takes part (RNG states and window losses are gathered); rank 0 writes.

        `summary` (at the final step) is stored so that a re-invoked finished run reports it.
        """
        self._check_finite(float(self.world.sum(torch.as_tensor(self.window.loss, device=self.device))))
        ranks = self.world.gather((torch.get_rng_state(), float(self.window.loss)))
        if not self.world.is_main:
            return
        TrainState(fingerprint=self.job.fingerprint, step=self.step, model=self.model.state_dict(),
                   optimizer=self.optimizer.state_dict(), ranks=ranks, stream=self.consumed_stream_state,
                   target_tokens=self.target_tokens, log_window=self.window.saved(),
                   last_metrics=self.last_metrics, summary=summary, extra=self.job.extra).write(self.checkpoint_path)
        for cb in self.callbacks:
            cb.on_checkpoint(self.step, self.checkpoint_path)

    # ---- the loop ----------------------------------------------------------------
    def learning_rate(self, step: int) -> float:
        return scheduled_lr(self.config, step)

    def train_step(self, batch: Batch) -> torch.Tensor:
        """One optimiser step on the global `batch` at this step's learning rate.

        Returns this rank's share of the loss (on device); summed over ranks it is the batch loss.
        """
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate(self.step)
        pad_id = self.job.vocab.pad_id
        self.target_tokens += batch.n_tokens
        weight = self.loss_weight(batch)
        local = shard_batch(batch, self.world, pad_id).to(self.device, non_blocking=True)
        if self.compiled:
            mark_dynamic_lengths(local)
        if self.flops_per_position is None:
            self.flops_per_position = flops_per_position(
                lambda model, probe: batch_loss(model, probe, pad_id, amp=self.amp), self.model, local)
        loss = optimizer_step(self.net, self.optimizer, local, pad_id, self.config.grad_clip,
                              token_weight=weight, amp=self.amp)
        self.step += 1
        return loss / self.world.size

    def loss_weight(self, batch: Batch) -> float | None:
        """The weight of this rank's summed token loss (None: its mean, one process under
        `loss_weighting: batch`). Under `token` the divisor is the running mean of target tokens
        per global batch instead of this batch's own count, so a batch of short answers weighs
        less than one of long answers, as their tokens would in one shuffled batch (`target_tokens`
        counts `batch`'s already)."""
        if self.config.loss_weighting == "token":
            return self.world.size * (self.step + 1) / self.target_tokens
        return self.world.size / batch.n_tokens if self.world.distributed else None

    def fit(self) -> dict:
        """Train to `config.steps`; raises `Preempted` after checkpointing if a signal arrived.

        Any other failure reaches the callbacks' `on_train_failed` before it propagates.
        """
        if self.finished is not None:  # a finished run re-invoked: report it, train nothing
            if self.world.is_main:
                print(f"[{self.name}] {self.checkpoint_path} is already at step {self.step}; nothing to train")
                self._keep()
            return dict(self.finished)
        self.net.train()
        for cb in self.callbacks:
            cb.on_train_start(self)
        try:
            return self._fit()
        except Preempted:
            raise
        except BaseException as exc:
            for cb in self.callbacks:
                cb.on_train_failed(self.step, exc)
            raise

    def _fit(self) -> dict:
        started = time.perf_counter()
        self.window.since = started
        prefetch = Prefetcher(self.stream, prefetch_depth(self.config.prefetch, self.device),
                              pin_memory=self.device.type == "cuda")
        with PreemptionFlag() as flag, prefetch:
            while self.step < self.config.steps:
                if self.world.any(flag.requested):
                    self._stop(flag.signum)
                waiting = time.perf_counter()
                batch, stream_state = next(prefetch)
                waited = time.perf_counter() - waiting
                self.window.add(self.train_step(batch), batch, self.job.vocab.pad_id, waited)
                self.consumed_stream_state = stream_state
                if self.step % self.config.log_every == 0 or self.step == self.config.steps:
                    self._log()
                if self.step == self.config.steps:
                    break
                if self.step % self.config.checkpoint_every == 0:
                    self.save_checkpoint()
        summary = {
            "name": self.name,
            "steps": self.step,
            "resumed_from": self.resumed_from,
            "final_loss": self.last_metrics.get("loss", math.nan),  # mean over the last logging window
            "parameters": count_parameters(self.model),
            "wall_seconds": time.perf_counter() - started,
            "device": str(self.device),
            "processes": self.world.size,
        }
        self.save_checkpoint(summary)
        if self.world.is_main:
            self._keep()
        for cb in self.callbacks:
            cb.on_train_end(summary)
        return summary

    def _keep(self) -> None:
        """Keep the finished state in checkpoint.pt (train/kept_states.py), so that a later training under
        these settings resumes from it whatever checkpoint.pt then holds."""
        kept_states.keep(self.checkpoint_path, self.job.fingerprint, self.step, self.kept_with)

    def _stop(self, signum: int | None) -> None:
        self.save_checkpoint()
        self.world.barrier()  # every rank leaves only once the checkpoint is on disk
        for cb in self.callbacks:
            cb.on_preempted(self.step)
        raise Preempted(self.step, signum or signal.SIGTERM)

    def _log(self) -> None:
        window = self.window
        elapsed = window.elapsed()
        loss = self.world.sum(torch.as_tensor(window.loss, device=self.device))
        metrics = {
            "loss": float(loss) / window.steps,
            "lr": self.learning_rate(self.step - 1),
            "samples_per_s": window.samples / elapsed,
            "tokens_per_s": window.tokens / elapsed,
            **self._speed(window, elapsed),
        }
        self._check_finite(metrics["loss"])
        self.last_metrics = metrics
        for cb in self.callbacks:
            cb.on_log(self.step, metrics)
        self.window = LogWindow()

    def _speed(self, window: LogWindow, elapsed: float) -> dict[str, float]:
        """The window's share of time waiting for data, its padding share, and its model-FLOPs
        utilisation on real tokens and on padded shapes (train/throughput.py). Tokens and positions
        are this process's, set against one device's peak."""
        if self.peak_flops is None:
            self.peak_flops = matmul_peak(self.device, torch.bfloat16 if self.amp else torch.float32)
        real, padded = window.tokens / self.world.size, window.positions / self.world.size
        flops = (self.flops_per_position or 0.0) / elapsed / self.peak_flops
        return {"data_wait_share": window.data_wait / elapsed, "padding_share": 1 - real / max(padded, 1),
                "mfu_real": flops * real, "mfu_padded": flops * padded}

    def _check_finite(self, window_loss: float) -> None:
        """Raise `Diverged` on a non-finite loss or weight (checked at logging and checkpoint steps)."""
        bad = None
        if not math.isfinite(window_loss):
            bad = f"loss {window_loss}"
        elif not all(bool(torch.isfinite(p).all()) for p in self.model.parameters()):
            bad = "non-finite weights"
        if bad is not None:
            kept = (f"the last good checkpoint {self.checkpoint_path} is kept"
                    if self.checkpoint_path.is_file() else "no checkpoint was written")
            raise Diverged(f"{self.name}: training diverged by step {self.step} ({bad}); {kept}. "
                           f"Lower train.lr or raise train.warmup_steps")

    def export(self, path: Path) -> None:
        """The trained model for evaluation: weights, architecture and vocabulary (rank 0 writes)."""
        if not self.world.is_main:
            return
        save_checkpoint(
            {
                "model": self.model.state_dict(),
                "model_config": asdict(self.job.model),
                "vocab": self.job.vocab.state(),
                "step": self.step,
                "fingerprint": self.job.fingerprint,
            },
            path,
        )

    def close(self) -> None:
        """Leave the process group. The DDP wrapper goes first: its reducer holds the group, and a group freed
        from the reducer joins gloo's worker threads while holding the GIL, which deadlocks when a worker is
        still freeing a collective's Python tensors (seen with torch 2.13: a rank that returns at once hung).
        Freed through torch's own handle instead, the group releases the GIL before it joins."""
        self.net = self.model
        self.world.close()
