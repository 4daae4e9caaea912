"""What each job does, in the units its speed is measured in: training samples (steps x batch) of a
preset, problems decoded by a preset, problems generated, or a fixed job. Counts that depend on
release files the params only point at are None (the plan shows such jobs unpriced). Each stage declares
its jobs' work (tprepro.experiments.Stage.work) with the builders here; `tprepro plan` prices it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    kind: str  # train | decode | generate | read | fixed
    items: int | None = None  # samples trained, problems decoded or generated; None: not known from the params
    preset: str | None = None  # the model's preset (train, decode)
    steps: int | None = None  # train: optimizer steps of `batch_size` samples
    batch_size: int | None = None
    checkpoints: int | None = None  # train: checkpoints written (also the learning curve's points)
    max_requeues: int | None = None  # train: Snakemake re-runs of a preempted (or timed-out) job
    module: str | None = None  # generate: the Mathematics module (generators differ in speed by module)
    split: str | None = None  # generate: the Mathematics split (and by difficulty)
    shards: int | None = None  # generate: the shards written (the unit its processes share)

    @property
    def module_family(self) -> str | None:
        """generate: its Mathematics module's family."""
        return module_family(self.module) if self.module else None

    @property
    def unit(self) -> str:
        return {"train": "samples trained", "decode": "problems decoded", "generate": "problems made", "read": "problems read",
                "fixed": ""}[self.kind]


def module_family(module: str) -> str:
    """A Mathematics module's family: `algebra` of `algebra__linear_1d`."""
    return module.split("__")[0]


def training(train: dict, preset: str) -> Work:
    """A training job of `preset` under merged train settings `train`."""
    steps, batch = train["steps"], train["batch_size"]
    return Work("train", steps * batch, preset, steps, batch, max(1, -(-steps // train["checkpoint_every"])),
                train["max_requeues"])


def preset_of(models: dict, name: str) -> str:
    """The preset of model `name` in a params `models` mapping."""
    return models[name]["preset"]


def fixed(params: dict, item: dict) -> Work:
    """A job whose time does not grow with the params' sizes (tables, indexes, interpretation samples)."""
    return Work("fixed")
