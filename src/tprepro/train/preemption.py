"""Preemption: SIGTERM, SLURM's early-warning signal or Ctrl-C (SIGINT) ends training cleanly, to be resumed.

A handler only sets a flag. The trainer looks at it at the next step boundary,
writes its checkpoint atomically and raises `Preempted`; `tprepro train` then
exits with `REQUEUE_EXIT`. Snakemake re-runs the job (the train rule has
`retries:` from `train.max_requeues`; on SLURM the retry is a new allocation)
and the next attempt resumes from the checkpoint. Only this status is requeued:
after any other failure the remaining attempts exit at once (train/requeue.py). DVC has no requeue: running
`dvc repro` again resumes the same way.

SLURM: submit with `--signal=USR1@<seconds>` so the warning arrives while a
step and a checkpoint still fit before the kill.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

# EX_TEMPFAIL from sysexits.h: "try again later". Distinct from 0, 1 (crash) and 2 (bad input).
REQUEUE_EXIT = 75
SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)  # SIGINT: Ctrl-C, no KeyboardInterrupt


class Preempted(Exception):
    """Training stopped on a signal after writing its checkpoint at `step`."""

    def __init__(self, step: int, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name} at step {step}; checkpoint written, "
                         f"re-run to resume (exit status {REQUEUE_EXIT})")
        self.step = step
        self.signum = signum


class PreemptionFlag:
    """Context manager: while active, SIGTERM/SIGUSR1/SIGINT set `signum` instead of stopping the process."""

    def __init__(self):
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signum

    def __enter__(self) -> "PreemptionFlag":
        if threading.current_thread() is not threading.main_thread():
            return self  # Python delivers signals to the main thread only
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
