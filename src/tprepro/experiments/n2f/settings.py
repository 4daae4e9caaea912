"""The N2F experiments' settings: merged train settings per task and cross-key rules."""

from __future__ import annotations

from dataclasses import replace

from tprepro.errors import TpreproError
from tprepro.experiments.n2f import TASKS
from tprepro.params import check_train_settings
from tprepro.params.layered import Layered
from tprepro.work import Work, preset_of, training


TRAIN_SETTINGS = Layered("train", ("n2f.train", "n2f.{task}.train"))  # n2f.train's schema requires the keys whose shared values go unread
TRAIN_DEVICE = replace(TRAIN_SETTINGS, keys=("device",))  # what an evaluation reads of them
TRAIN_BUDGET = replace(TRAIN_SETTINGS, keys=("steps", "batch_size"))  # what a table reads of them


def n2f_train(params: dict, task: str | None = None) -> dict:
    """`train`, then `n2f.train`, then `n2f.<task>.train` on top."""
    return TRAIN_SETTINGS.merged(params, **({"task": task} if task else {}))


def needs_release(section: dict, task: str) -> bool:
    """Whether `task` reads the release's files (n2f.<task>.data.train/test) under the n2f `section`:
    MathQA always, AlgoLisp unless generated."""
    return task == "mathqa" or section[task]["data"].get("source") == "release"


def unlisted_task(params: dict, task: str, source: str) -> str | None:
    """What to change in `source` before an output of `task` can be made; None if n2f.tasks lists it
    (Snakemake's plan stops with this instead of planning jobs whose first fails)."""
    section = params["n2f"]
    if task in section["tasks"]:
        return None
    files = [f"n2f.{task}.data.{split}" for split in ("train", "test") if not section[task]["data"].get(split)]
    release = (f", and set {' and '.join(files)} to the release's files (src/tprepro/experiments/n2f/README.md "
               f"says where to get them)," if needs_release(section, task) and files else "")
    return f"{source}: n2f.tasks: add '{task}' (it lists {section['tasks']}){release} to make {task}'s outputs"


def listed_task(params: dict, source: str):
    """A Snakemake input function of the rules' `task` wildcard that adds no input: for a task that
    n2f.tasks does not list it raises, so that the plan stops saying what to add (unlisted_task)."""
    def nothing_if_listed(wildcards) -> list[str]:
        problem = unlisted_task(params, wildcards.task, source)
        if problem:
            raise TpreproError(problem)
        return []

    return nothing_if_listed


def check_n2f(params: dict, source: str) -> None:
    """Merged train settings; every model has settings per task; the data each task needs is named;
    the model whose unbinding is analysed is trained."""
    section = params["n2f"]
    for task in TASKS:
        check_train_settings(n2f_train(params, task), source, f"n2f.{task}.train")
        for name in section["models"]:
            if name not in section[task]["models"]:
                raise TpreproError(f"{source}: n2f.models: '{name}' has no entry under n2f.{task}.models")
    for task in section["tasks"]:
        for split in ("train", "test"):
            if needs_release(section, task) and not section[task]["data"][split]:
                raise TpreproError(f"{source}: n2f.{task}.data.{split}: set the path of the {task} "
                                   f"{split} file (the task is listed in n2f.tasks)")
    unbinding = section["interpret"]["unbinding"]["model"]
    if unbinding not in section["models"]:
        raise TpreproError(f"{source}: n2f.interpret.unbinding.model: '{unbinding}' is not in n2f.models")


# What each job does (tprepro.plan.work), for `tprepro plan` and the SLURM runtimes. A release's sizes are
# in its files, not in the params: None (the plan shows the job unpriced).
def _algolisp_generated(params: dict, task: str) -> dict | None:
    data = params["n2f"][task]["data"]
    return data["generate"] if task == "algolisp" and data.get("source") == "generate" else None


def data_work(params: dict, item: dict) -> Work:
    generated = _algolisp_generated(params, item["task"])
    return Work("generate", generated["train"] + generated["test"] if generated else None)


def train_work(params: dict, item: dict) -> Work:
    task = item["task"]
    return training(n2f_train(params, task), preset_of(params["n2f"][task]["models"], item["model"]))


def evaluate_work(params: dict, item: dict) -> Work:
    generated = _algolisp_generated(params, item["task"])
    return Work("decode", generated["test"] if generated else None,
                preset_of(params["n2f"][item["task"]]["models"], item["model"]))
