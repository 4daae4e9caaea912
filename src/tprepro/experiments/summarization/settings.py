"""The `summarization:` section of params.yaml: merged train settings and cross-key checks."""

from __future__ import annotations

from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.params import check_train_settings, merge_overrides

# Where each release format lies in the CI corpus (corpus.write_releases) when a dataset's path is null.
CORPUS_PATHS = {"huggingface": "{dataset}", "stories": "cnndm_stories", "wikihow_csv": "wikihow/wikihowAll.csv",
                "arxiv_jsonl": "arxiv"}


def summarization_train(params: dict) -> dict:
    """`train` with `summarization.train` on top."""
    return merge_overrides(params["train"], params["summarization"]["train"])


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
    corpus = section["corpus"]
    if corpus["validation_fraction"] + corpus["test_fraction"] >= 1:
        raise TpreproError(f"{source}: summarization.corpus: validation_fraction + test_fraction must be < 1")
    for dataset, settings in section["datasets"].items():
        if settings["path"] is None and settings["format"] == "huggingface" and dataset not in ("xsum", "cnndm"):
            raise TpreproError(f"{source}: summarization.datasets.{dataset}.path: required (the CI corpus "
                               "has Hugging Face exports of xsum and cnndm only)")
