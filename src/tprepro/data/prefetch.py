"""Training batches made ahead on a background thread, each with the stream state that follows it.

The trainer's step never waits for rows to be read, shuffled, sorted and collated while the
thread keeps `depth` batches ready. Each batch comes with `stream.state_dict()` taken right after
it was made, so a checkpoint records where the *consumed* batches end, not where the thread has
got to, and a resumed run sees exactly the batches it would have seen (tests/train/test_trainer.py).
On CUDA the thread also pins the batch's memory, so its copy to the GPU (`Batch.to(device,
non_blocking=True)`) overlaps the step before it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import torch

from tprepro.data.batching import Batch, BatchStream


def prefetch_depth(setting: int | str, device: torch.device) -> int:
    """`train.prefetch`: a number of batches, or auto: 2 on CUDA, 0 elsewhere. On CPU the thread shares the
    cores with the step it would hide (and, in a pipeline, with the other jobs): a tiny TP-Transformer
    trained 9% slower with it two jobs on 2 cores, 25% slower three on 2 (docs/gpu.md)."""
    if setting == "auto":
        return 2 if device.type == "cuda" else 0
    return int(setting)


class Prefetcher:
    """Iterate over (batch, stream state after it) of `stream`, `depth` batches ahead (0: made on demand).

    `close()` stops the thread; an exception raised while making a batch is raised again by `next()`.
    """

    def __init__(self, stream: BatchStream, depth: int = 2, pin_memory: bool = False):
        self.stream, self.depth, self.pin_memory = stream, depth, pin_memory
        self._batches = iter(stream)
        self._ready: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self._stop = threading.Event()
        self._thread = None
        if depth > 0:
            self._thread = threading.Thread(target=self._fill, name="tprepro-prefetch", daemon=True)
            self._thread.start()

    def _make(self) -> tuple[Batch, dict]:
        batch = next(self._batches)
        if self.pin_memory:
            batch = batch.map(torch.Tensor.pin_memory)
        return batch, self.stream.state_dict()

    def _fill(self) -> None:
        try:
            while not self._stop.is_set():
                item = self._make()
                while not self._stop.is_set():
                    try:
                        self._ready.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # handed to the consumer, which raises it
            self._ready.put(exc)

    def __iter__(self) -> Iterator[tuple[Batch, dict]]:
        return self

    def __next__(self) -> tuple[Batch, dict]:
        if self._thread is None:
            return self._make()
        item = self._ready.get()
        if isinstance(item, BaseException):
            self.close()
            raise item
        return item

    def close(self) -> None:
        """Stop the thread (it finishes the batch in hand) and wait for it."""
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():
                try:
                    self._ready.get_nowait()  # unblock a pending put
                except queue.Empty:
                    pass
                self._thread.join(timeout=0.1)
            self._thread = None

    def __enter__(self) -> "Prefetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
