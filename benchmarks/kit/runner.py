"""A training run through the project's Trainer (its stream, batch order, optimiser), set up as every training is
(tprepro.training.trainer), untracked; its metrics recorded by one callback: each logged window's metrics with the
seconds and CPU seconds of training so far, and where a probe is given (held-out loss, accuracy: any scoring of the
model) its results every so many steps, the clocks stopped while it scores."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch

from tprepro import training
from tprepro.data.shards import Dataset
from tprepro.train.callbacks import Callback
from tprepro.train.step import unwrap
from tprepro.train.trainer import Trainer
from tprepro.training import TrainingRun

Probe = Callable[[torch.nn.Module], dict]  # the model, in eval mode -> named results


class Recorder(Callback):
    """Every logged window: {"step", "seconds", "cpu_seconds", **the trainer's metrics}, in `logged`.

    `probe`: called every `every` steps and at the last step on the unwrapped model in eval mode; its results join
    that window's point, which also goes to `probed`. `seconds` counts from `started` (default: the start of
    training; pass `time.perf_counter()` taken before the Trainer is built to count its construction too) without
    the probes' time; `cpu_seconds` is the process's CPU time likewise, from the start of training."""

    def __init__(self, probe: Probe | None = None, every: int = 1, started: float | None = None):
        self.probe, self.every, self.origin = probe, every, started
        self.logged: list[dict] = []
        self.probed: list[dict] = []
        self.trainer = None
        self.started = self.paused = self.cpu_started = self.cpu_paused = 0.0

    def on_train_start(self, trainer) -> None:
        self.trainer, self.paused, self.cpu_paused = trainer, 0.0, 0.0
        self.started = time.perf_counter() if self.origin is None else self.origin
        self.cpu_started = time.process_time()

    def on_log(self, step: int, metrics: dict) -> None:
        stop, cpu_stop = time.perf_counter(), time.process_time()
        point = {"step": step, "seconds": stop - self.started - self.paused,
                 "cpu_seconds": cpu_stop - self.cpu_started - self.cpu_paused, **metrics}
        self.logged.append(point)
        if self.probe is None or (step % self.every and step != self.trainer.config.steps):
            return
        model = unwrap(self.trainer.model)
        model.eval()
        point.update(self.probe(model))
        model.train()
        self.probed.append(point)
        self.paused += time.perf_counter() - stop
        self.cpu_paused += time.process_time() - cpu_stop


def preset_run(name: str, seed: int, model, config, datasets: Mapping[str, Dataset], codec) -> TrainingRun:
    """A benchmark's own run of `model` (a ModelConfig: a preset at the sizes it tries, no experiment's named model)
    under `config` on `datasets` with `codec`; an experiment's model is its `training_run(...)`'s instead."""
    return TrainingRun(name, seed, model, config, dict(datasets), None, None, None, codec=codec)


def train(run: TrainingRun, callbacks: Sequence[Callback] = (), folder: Path | None = None) -> tuple[Trainer, float]:
    """Train `run` untracked, checkpointing into `folder` (default: the run's checkpoints folder, else a temporary
    folder, removed). The finished Trainer and the seconds its training took (`fit`, the Trainer's construction left
    out)."""
    with tempfile.TemporaryDirectory() as tmp:
        trainer = training.trainer(run, callbacks, folder=Path(folder or run.checkpoints or tmp))
        started = time.perf_counter()
        trainer.fit()
        return trainer, time.perf_counter() - started
