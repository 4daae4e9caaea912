"""The device a training (or evaluation) runs on, and the speed paths it takes there: bf16 autocast and
torch.compile, on by default on CUDA."""

from __future__ import annotations

import torch

from tprepro.errors import TpreproError
from tprepro.params import TrainConfig


def pick_device(name: str, local_rank: int = 0) -> torch.device:
    """`auto`: CUDA if present, else CPU. Data-parallel ranks take GPU `local_rank`."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name, local_rank) if name == "cuda" else torch.device(name)


def speed_paths(config: TrainConfig, device: torch.device) -> tuple[bool, bool]:
    """(bf16 autocast, torch.compile) from `train.amp` / `train.compile`: `auto` means on for CUDA.

    compile=true on CPU is refused: Inductor would need a C++ toolchain at run time
    for a small gain, and the CPU path is the one the tests pin down exactly.
    amp=true on CPU is honoured (CPU autocast supports bf16), e.g. to study its numerics.
    """
    on_gpu = device.type == "cuda"
    amp = on_gpu if config.amp == "auto" else config.amp
    compile_ = on_gpu if config.compile == "auto" else config.compile
    if compile_ and not on_gpu:
        raise TpreproError("train.compile: torch.compile is a GPU speed path; use auto or false on CPU")
    return amp, compile_
