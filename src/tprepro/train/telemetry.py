"""What the trainer counts between two log lines, and the metrics it logs from them."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch

from tprepro.data.batching import Batch

SAVED = ("steps", "samples", "tokens", "positions", "data_wait")  # what a checkpoint keeps of an open window


@dataclass
class LogWindow:
    """This process's training since the last log line. The loss stays on the device (no host sync per
    step) until the window is logged."""

    loss: float | torch.Tensor = 0.0  # the steps' losses, summed
    steps: int = 0
    samples: int = 0  # problems trained on
    tokens: int = 0  # real tokens: targets and non-pad sources
    positions: int = 0  # positions the model computed, padding included
    data_wait: float = 0.0  # seconds spent waiting for batches
    since: float = field(default_factory=time.perf_counter)

    def add(self, loss: torch.Tensor, batch: Batch, pad_id: int, waited: float) -> None:
        """Count one training step on `batch` that took `waited` seconds to arrive."""
        self.loss += loss
        self.steps += 1
        self.samples += batch.problems
        self.tokens += batch.n_tokens + int((batch.src != pad_id).sum())
        self.positions += batch.positions
        self.data_wait += waited

    def elapsed(self) -> float:
        return max(time.perf_counter() - self.since, 1e-9)

    def saved(self) -> dict:
        """The counts a checkpoint keeps (its loss is gathered per rank apart)."""
        return {key: value for key, value in asdict(self).items() if key in SAVED}

    @classmethod
    def restored(cls, saved: dict, loss: float) -> "LogWindow":
        """The window a checkpoint left open, with this rank's share of its loss; its clock starts now."""
        return cls(loss=loss, **{key: saved[key] for key in SAVED if key in saved})
