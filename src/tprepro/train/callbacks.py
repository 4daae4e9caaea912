"""Training callbacks: the trainer reports through these and knows nothing of tqdm or MLflow."""

from __future__ import annotations

import sys
import time
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
    """Progress of a training job, between a timestamped line that says where and from which step
    training starts and one with the final step and loss.

    In a terminal: a tqdm bar over optimiser steps showing the last logged loss. In a log file (no
    terminal): a timestamped line at most every `log_interval` seconds of wall time (step, loss,
    steps/s since this attempt started, time left), no carriage-return redraws. `mirror`: a file that
    gets those lines too, whatever stderr is (the progress log where `tprepro status` finds every training).
    """

    def __init__(self, log_interval: float = 30.0, mirror: Path | None = None):
        self.log_interval = log_interval
        self.mirror = mirror
        self.bar = None

    def _say(self, text: str, terminal: bool = True) -> None:
        """A timestamped line on stderr (unless the bar stands for it: `terminal` False) and in the mirror."""
        line = f"{utc_stamp()} [{self.name}] {text}"
        if terminal:
            print(line, file=sys.stderr, flush=True)
        if self.mirror is not None:
            with open(self.mirror, "a", encoding="utf-8") as mirror:
                mirror.write(line + "\n")

    def on_train_start(self, trainer) -> None:
        config = trainer.config
        self.name, self.total = trainer.name, config.steps
        if self.mirror is not None:
            self.mirror.parent.mkdir(parents=True, exist_ok=True)
        start = f"resuming at step {trainer.step}" if trainer.step else "from step 0"
        self._say(f"training on {trainer.device} ({torch.get_num_threads()} threads, bf16 autocast "
                  f"{'on' if trainer.amp else 'off'}), {start} of {config.steps}, batch {config.batch_size}")
        if sys.stderr.isatty():
            self.bar = tqdm(total=config.steps, initial=trainer.step, desc=trainer.name, unit="step", mininterval=1.0)
        self.started, self.first_step = time.monotonic(), trainer.step
        self.printed = self.started

    def on_log(self, step: int, metrics: dict[str, float]) -> None:
        if self.bar is not None:
            self.bar.update(step - self.bar.n)
            self.bar.set_postfix(loss=f"{metrics['loss']:.4f}", refresh=False)
        now = time.monotonic()
        if now - self.printed < self.log_interval or (self.bar is not None and self.mirror is None):
            return
        self.printed = now
        rate = (step - self.first_step) / max(now - self.started, 1e-9)  # steps/s of this attempt
        left = f", about {(self.total - step) / rate / 60:.1f} min left" if rate > 0 else ""
        self._say(f"step {step}/{self.total}, loss {metrics['loss']:.4f}, {rate:.2f} steps/s{left}",
                  terminal=self.bar is None)

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def on_train_end(self, summary: dict) -> None:
        if self.bar is not None:
            self.bar.update(summary["steps"] - self.bar.n)
        self._close()
        self._say(f"finished: step {summary['steps']}, final loss {summary['final_loss']:.4f}")

    def on_preempted(self, step: int) -> None:
        self._close()

    def on_train_failed(self, step: int, error: BaseException) -> None:
        self._close()
