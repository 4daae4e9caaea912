"""A benchmark's changes to the settings it measures under: the train settings of a params file with the run's own
length, batch order or device, and the model sizes the benchmarks try over a preset's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tprepro.params import TrainConfig, load_params

# Model sizes over a preset's: the preset's own, and the d=128 configuration (3+3 layers, 4 heads, d_ff 512).
SIZES = {
    "tiny": {},
    "d128": {"d_model": 128, "n_heads": 4, "d_ff": 512, "n_encoder_layers": 3, "n_decoder_layers": 3},
}


def params_train(params_path: Path, experiment: str | None = None) -> TrainConfig:
    """The params file's `train:`, with `experiment`'s own `train:` section over it where it has one."""
    params = load_params(params_path)
    if experiment is not None:
        params["train"].update(params.get(experiment, {}).get("train", {}))
    return TrainConfig.from_params(params)


def given(**changes) -> dict:
    """The changes that are set: an option left at None keeps the params file's setting."""
    return {name: value for name, value in changes.items() if value is not None}


def cpu_run(config: TrainConfig, steps: int, threads: int, **changes) -> TrainConfig:
    """`config` for a run of `steps` steps on the CPU's `threads` threads in float32, uncompiled, one process,
    checkpointed only at its end; `changes`: any other train settings."""
    return dataclasses.replace(config, steps=steps, checkpoint_every=steps, device="cpu", threads=threads,
                               amp=False, compile=False, processes=1, **changes)
