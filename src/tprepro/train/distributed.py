"""Data-parallel training: one process per GPU (or per CPU worker with gloo), same global batch.

Workers follow torchrun's environment contract (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), so `torchrun --nproc_per_node N -m tprepro train ...`
runs them as well as `launch`, the launcher `tprepro train` uses when
`train.processes` asks for more than one. `launch` forwards SIGTERM and SIGUSR1
to the workers (torchrun itself dies on SIGUSR1), so preemption works under it.

Every rank reads the same deterministic batch stream and takes its contiguous
slice of each global batch; the loss is the token mean over the whole global
batch, so a step equals the single-process step up to float rounding.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from tprepro.data.batching import Batch, count_targets
from tprepro.errors import TpreproError
from tprepro.train.preemption import REQUEUE_EXIT, SIGNALS


@dataclass(frozen=True)
class World:
    """This process's place among the training processes (rank 0 of 1 when not distributed)."""

    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @classmethod
    def from_env(cls) -> "World":
        env = os.environ
        return cls(int(env.get("RANK", 0)), int(env.get("LOCAL_RANK", 0)), int(env.get("WORLD_SIZE", 1)))

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def init(self, device: torch.device) -> None:
        """Join the process group: NCCL on GPUs, gloo on CPU."""
        if self.distributed and not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                    rank=self.rank, world_size=self.size)

    def close(self) -> None:
        """Leave the process group. The barrier first: gloo's worker threads finish (and free) every earlier
        collective while this thread waits without the GIL; freed later, inside the group's destructor,
        which holds the GIL, a worker freeing a tensor can deadlock the exit (seen with torch 2.13)."""
        if self.distributed and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()

    def any(self, flag: bool) -> bool:
        """True on every rank if `flag` is true on any rank (e.g. one rank got the signal)."""
        if not self.distributed:
            return flag
        device = "cuda" if dist.get_backend() == "nccl" else "cpu"  # NCCL reduces GPU tensors only
        value = torch.tensor([int(flag)], device=device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def sum(self, value: torch.Tensor) -> torch.Tensor:
        if self.distributed:
            value = value.detach().clone()
            dist.all_reduce(value)
        return value

    def gather(self, obj) -> list:
        """`obj` from every rank, in rank order (on every rank)."""
        if not self.distributed:
            return [obj]
        out: list = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()


def shard_batch(batch: Batch, world: World, pad_id: int) -> Batch:
    """This rank's contiguous slice of a global batch (padding as in the global batch)."""
    if not world.distributed:
        return batch
    if batch.src.shape[0] < world.size:
        raise TpreproError(f"train.batch_size: {batch.src.shape[0]} rows cannot be split "
                           f"over {world.size} processes")
    part = batch.map(lambda t: t.tensor_split(world.size)[world.rank])  # [B/N, S], [B/N, T(, 1+K)] x 2
    return replace(part, n_tokens=count_targets(part.tgt_out, pad_id))


def process_count(requested: int) -> int:
    """`train.processes`: 0 means one per visible GPU (one on CPU)."""
    return requested or max(1, torch.cuda.device_count())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(argv: list[str], nproc: int) -> int:
    """Run `python -m tprepro <argv>` as `nproc` workers; return the job's exit status.

    SIGTERM/SIGUSR1 are forwarded to every worker. The status is REQUEUE_EXIT
    when the workers stopped for preemption, else the first failure (or 0).
    """
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc)}
    workers = [subprocess.Popen([sys.executable, "-m", "tprepro", *argv],
                                env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(nproc)]

    def forward(signum, frame) -> None:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in SIGNALS}
    try:
        while any(worker.poll() is None for worker in workers):
            if any(worker.poll() not in (None, 0, REQUEUE_EXIT) for worker in workers):
                for worker in workers:  # a crashed rank would leave the others waiting forever
                    if worker.poll() is None:
                        worker.kill()
            time.sleep(0.2)
        codes = [worker.returncode for worker in workers]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if all(code == REQUEUE_EXIT for code in codes):
        return REQUEUE_EXIT
    return next((code for code in codes if code != 0), 0)
