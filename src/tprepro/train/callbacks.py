"""Training callbacks: the trainer reports through these and knows nothing of tqdm or MLflow."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from tqdm import tqdm

from tprepro.io import utc_stamp


class Callback:
    """Override what you need; every hook is optional."""

    def on_train_start(self, trainer) -> None: ...

    def on_log(self, step: int, metrics: dict[str, float]) -> None: ...

    def on_checkpoint(self, step: int, path: Path) -> None: ...

    def on_preempted(self, step: int) -> None: ...

    def on_train_end(self, summary: dict) -> None: ...

    def on_train_failed(self, step: int, error: BaseException) -> None: ...


class ProgressBar(Callback):
    """A tqdm bar over optimiser steps, showing the last logged loss, between a timestamped line
    that says where and from which step training starts and one with the final step and loss.

    In a log file (no terminal) it redraws at most every `log_interval` seconds.
    """

    def __init__(self, log_interval: float = 30.0):
        self.log_interval = log_interval
        self.bar = None

    def on_train_start(self, trainer) -> None:
        interactive = sys.stderr.isatty()
        config = trainer.config
        start = f"resuming at step {trainer.step}" if trainer.step else "from step 0"
        print(f"{utc_stamp()} [{trainer.name}] training on {trainer.device} ({torch.get_num_threads()} threads, "
              f"bf16 autocast {'on' if trainer.amp else 'off'}), {start} of {config.steps}, batch {config.batch_size}",
              file=sys.stderr, flush=True)
        self.bar = tqdm(
            total=trainer.config.steps, initial=trainer.step, desc=trainer.name, unit="step",
            mininterval=1.0 if interactive else self.log_interval, ascii=not interactive,
        )

    def on_log(self, step: int, metrics: dict[str, float]) -> None:
        self.bar.update(step - self.bar.n)
        self.bar.set_postfix(loss=f"{metrics['loss']:.4f}", refresh=False)

    def on_train_end(self, summary: dict) -> None:
        self.bar.update(summary["steps"] - self.bar.n)
        self.bar.close()
        print(f"{utc_stamp()} [{self.bar.desc}] finished: step {summary['steps']}, final loss "
              f"{summary['final_loss']:.4f}", file=sys.stderr, flush=True)

    def on_preempted(self, step: int) -> None:
        self.bar.close()

    def on_train_failed(self, step: int, error: BaseException) -> None:
        self.bar.close()
