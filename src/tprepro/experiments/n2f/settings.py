"""The N2F experiments' settings: merged train settings per task and cross-key rules."""

from __future__ import annotations

from tprepro.errors import TpreproError
from tprepro.experiments.n2f import TASKS
from tprepro.params import check_train_settings, merge_overrides


def n2f_train(params: dict, task: str | None = None) -> dict:
    """`train`, then `n2f.train`, then `n2f.<task>.train` on top."""
    merged = merge_overrides(params["train"], params["n2f"]["train"])
    return merge_overrides(merged, params["n2f"][task].get("train", {})) if task else merged


def check_n2f(params: dict, source: str) -> None:
    """Merged train settings; every model has settings per task; the data each task needs is named;
    the model whose unbinding is analysed is trained."""
    section = params["n2f"]
    for task in TASKS:
        check_train_settings(n2f_train(params, task), source, f"n2f.{task}.train")
        for name in section["models"]:
            if name not in section[task]["models"]:
                raise TpreproError(f"{source}: n2f.models: '{name}' has no entry under n2f.{task}.models")
    needs = {"mathqa": True, "algolisp": section["algolisp"]["data"]["source"] == "release"}
    for task in section["tasks"]:
        for split in ("train", "test"):
            if needs[task] and not section[task]["data"][split]:
                raise TpreproError(f"{source}: n2f.{task}.data.{split}: set the path of the {task} "
                                   f"{split} file (the task is listed in n2f.tasks)")
    unbinding = section["interpret"]["unbinding"]["model"]
    if unbinding not in section["models"]:
        raise TpreproError(f"{source}: n2f.interpret.unbinding.model: '{unbinding}' is not in n2f.models")
