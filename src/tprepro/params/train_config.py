"""The `train:` section of params.yaml as a dataclass: each training setting declared once, with what a change
of it does to a run that resumes.

A setting's field says, beside its comment, how a checkpoint's fingerprint (train/trainer.py) treats it:
- `setting(resumable=True)`: may change between a run and its resumption (extending `steps`, another device):
  never fingerprinted;
- `setting(unfingerprinted_at=V)`: left out of the fingerprint while at V, what every run did before the
  setting existed, so that checkpoints written then still resume;
- any other setting is fingerprinted: a checkpoint written under another value is not resumed from.
tests/params/test_train_config.py holds the fields equal to the schema's `train` properties.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from tprepro.errors import TpreproError, unknown

# Keys of the train section that are no trainer setting: the learning curve's sample (training.heldout_settings),
# which the weights never see; it stays out of TrainConfig, the fingerprint and the run's logged MLflow params.
NOT_TRAINER_SETTINGS = ("curve_sample",)

_RESUMABLE = "resumable"
_UNFINGERPRINTED_AT = "unfingerprinted_at"


def setting(default: Any = MISSING, *, resumable: bool = False, unfingerprinted_at: Any = MISSING):
    """A TrainConfig field with its resume behaviour (see the module's docstring)."""
    metadata = {_RESUMABLE: resumable}
    if unfingerprinted_at is not MISSING:
        metadata[_UNFINGERPRINTED_AT] = unfingerprinted_at
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class TrainConfig:
    """The `train:` section of params.yaml (the paper's optimiser lives in workflow/configs/paper.yaml)."""

    steps: int = setting(resumable=True)  # optimiser steps (the paper: 1.7M; Table 1 rows at 500k and 700k)
    batch_size: int = setting()  # problems per batch (the paper: 1024)
    lr: float = setting()  # Adam learning rate (the paper: 1e-4); Adafactor: the cap of its relative step size
    betas: tuple[float, float] = setting()  # Adam betas (the paper: 0.9, 0.995)
    grad_clip: float = setting()  # gradient-norm clip (the paper: 0.1)
    warmup_steps: int = setting()  # linear warm-up steps (the paper: none)
    checkpoint_every: int = setting(resumable=True)  # write a resumable checkpoint every N steps (and at the end)
    log_every: int = setting(resumable=True)  # report loss / learning rate / throughput every N steps
    bucket_width: int = setting()  # batching: buckets: length-bucket width in characters
    shuffle_buffer: int = setting()  # rows in the stream's shuffle buffer (data/batching.py)
    read_rows: int = setting()  # rows each dataset's reader holds at once: memory ~ datasets x this + shuffle_buffer
    device: str = setting(resumable=True)  # auto | cpu | cuda
    threads: int = setting(resumable=True)  # torch intra-op threads per job (0: torch's default)
    amp: str | bool = setting("auto", resumable=True)  # bf16 autocast: auto (on for CUDA) | true | false
    compile: str | bool = setting("auto", resumable=True)  # torch.compile: auto (on for CUDA) | true | false
    #                                                        (true refused on CPU)
    processes: int = setting(1, resumable=True)  # data-parallel processes per job, same global batch (0: one per
    #                                              visible GPU)
    max_requeues: int = setting(0, resumable=True)  # Snakemake re-runs of a preempted job (`retries:`); each
    #                                                 resumes its checkpoint
    optimizer: str = setting("adam", unfingerprinted_at="adam")  # adam | adafactor (torch.optim.Adafactor; `lr`
    #                                                              caps its relative step size)
    schedule: str = setting("constant", unfingerprinted_at="constant")  # constant (after warm-up) | inverse_sqrt
    #                (peak at warmup_steps, then 1/sqrt(step)) | cosine (peak at warmup_steps, half a cosine down
    #                to 0 at `steps`)
    batching: str = setting("pool", unfingerprinted_at="buckets")  # batch order (data/batching.py): pool
    #                (length-sorted pools) | buckets (of bucket_width, the order before the setting existed)
    pool_batches: int = setting(16, unfingerprinted_at=16)  # batching: pool: batches cut from each length-sorted
    #                                                         pool of rows (1: random batches)
    loss_weighting: str = setting("batch", unfingerprinted_at="batch")  # batch: each step's loss is its batch's
    #                mean per target token (short and long batches weigh alike) | token: the batch's summed loss
    #                over the running mean of target tokens per batch, so every token weighs alike across batches
    prefetch: int | str = setting("auto", resumable=True)  # batches made ahead on a background thread
    #                (data/prefetch.py); 0: in the training loop; auto: 2 on CUDA, 0 on CPU (there the thread
    #                competes with the step)
    packing: bool = setting(False, unfingerprinted_at=False)  # several problems laid end to end per row, each
    #                attending only within itself (data/packing.py): the same loss as padded rows, little
    #                padding (Transformer archs on character problems; validation refuses it for an experiment
    #                that cannot pack, by name)

    @classmethod
    def from_params(cls, params: dict) -> "TrainConfig":
        """The config of `params["train"]`; a key that is neither a field nor one of NOT_TRAINER_SETTINGS is
        refused, naming it."""
        section = dict(params["train"])
        names = [f.name for f in fields(cls)]
        strays = [key for key in section if key not in names and key not in NOT_TRAINER_SETTINGS]
        if strays:
            raise TpreproError(f"train.{strays[0]}: {unknown('training setting', strays[0], names)}")
        section["betas"] = tuple(section["betas"])
        return cls(**{name: value for name, value in section.items() if name in names})


def fingerprinted(config: TrainConfig) -> dict:
    """The settings of `config` that identify a run for resuming (see the module's docstring)."""
    values = asdict(config)
    return {f.name: values[f.name] for f in fields(config)
            if not f.metadata[_RESUMABLE] and f.metadata.get(_UNFINGERPRINTED_AT, MISSING) != values[f.name]}


def resumable_settings() -> tuple[str, ...]:
    """The settings that may change between a run and its resumption."""
    return tuple(f.name for f in fields(TrainConfig) if f.metadata[_RESUMABLE])


# Setting -> the value every run had before the setting existed (what old records without it mean).
FINGERPRINT_DEFAULTS = {f.name: f.metadata[_UNFINGERPRINTED_AT] for f in fields(TrainConfig)
                        if _UNFINGERPRINTED_AT in f.metadata}
