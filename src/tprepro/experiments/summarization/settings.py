"""The `summarization:` section of params.yaml: merged train settings and cross-key checks."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.params import check_train_settings, packing_key
from tprepro.params.layered import Layered
from tprepro.work import Work, preset_of, training

# Where each release format lies in the CI corpus (corpus.write_releases) when a dataset's path is null.
CORPUS_PATHS = {"huggingface": "{dataset}", "stories": "cnndm_stories", "wikihow_csv": "wikihow/wikihowAll.csv",
                "arxiv_jsonl": "arxiv"}


TRAIN_SETTINGS = Layered("train", ("summarization.train",))  # its schema requires the keys whose shared values go unread
TRAIN_DEVICE = replace(TRAIN_SETTINGS, keys=("device",))  # what an evaluation reads of them
TRAIN_BUDGET = replace(TRAIN_SETTINGS, keys=("steps", "batch_size"))  # what a table reads of them


def summarization_train(params: dict) -> dict:
    """`train` with `summarization.train` on top."""
    return TRAIN_SETTINGS.merged(params)


def release_path(params: dict, dataset: str, corpus_dir: Path) -> Path:
    """The release files of `dataset`: its `path`, or the CI corpus's files of its format."""
    settings = params["summarization"]["datasets"][dataset]
    if settings["path"]:
        return Path(settings["path"])
    relative = CORPUS_PATHS[settings["format"]].format(dataset=dataset)
    if settings["format"] == "huggingface" and dataset not in ("xsum", "cnndm"):
        raise TpreproError(f"summarization.datasets.{dataset}.path: the CI corpus has Hugging Face exports of "
                           "xsum and cnndm only; set a path")
    return corpus_dir / relative


def check_summarization(params: dict, source: str) -> None:
    """Merged train settings valid; corpus fractions leave a training split."""
    section = params["summarization"]
    check_train_settings(summarization_train(params), source, "summarization.train")
    if summarization_train(params).get("packing"):  # the trainer packs character problems only
        key = packing_key(params, "summarization.models")
        raise TpreproError(f"{source}: {key}: true reaches the summarization experiment, whose SubwordCodec batches "
                           f"cannot be packed (packing lays character problems end to end); set "
                           f"summarization.train.packing: false")
    corpus = section["corpus"]
    if corpus["validation_fraction"] + corpus["test_fraction"] >= 1:
        raise TpreproError(f"{source}: summarization.corpus: validation_fraction + test_fraction must be < 1")
    for dataset, settings in section["datasets"].items():
        if settings["path"] is None and settings["format"] == "huggingface" and dataset not in ("xsum", "cnndm"):
            raise TpreproError(f"{source}: summarization.datasets.{dataset}.path: required (the CI corpus "
                               "has Hugging Face exports of xsum and cnndm only)")


# What each job does (tprepro.plan.work), for `tprepro plan` and the SLURM runtimes.
def data_work(params: dict, item: dict) -> Work:
    # the CI corpus's slice: a fixed job; a release's size (its subword model's work) is not in the params
    return Work("fixed") if params["summarization"]["datasets"][item["key"]]["path"] is None else Work("generate")


def train_work(params: dict, item: dict) -> Work:
    return training(summarization_train(params), preset_of(params["summarization"]["models"], item["model"]))


def evaluate_work(params: dict, item: dict) -> Work:
    section = params["summarization"]
    corpus = section["corpus"]
    # the CI corpus's test split when the dataset has no release path; a release's size is not in the params
    test = round(corpus["max_examples"] * corpus["test_fraction"]) \
        if section["datasets"][item["dataset"]]["path"] is None else None
    cap = section["evaluate"]["max_documents"]
    documents = min(cap, test) if cap and test else (cap or test)
    return Work("decode", documents, preset_of(section["models"], item["model"]))
