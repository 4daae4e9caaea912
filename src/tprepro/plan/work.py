"""What each job does, in the units its speed is measured in: training samples (steps x batch) of a
preset, problems decoded by a preset, problems generated, or a fixed job. Counts that depend on
release files the params only point at are None (the plan shows such jobs unpriced)."""

from __future__ import annotations

from dataclasses import dataclass

from tprepro.errors import TpreproError


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
    def unit(self) -> str:
        return {"train": "samples trained", "decode": "problems decoded", "generate": "problems made", "read": "problems read",
                "fixed": ""}[self.kind]


def _training(train: dict, preset: str) -> Work:
    steps, batch = train["steps"], train["batch_size"]
    return Work("train", steps * batch, preset, steps, batch, max(1, -(-steps // train["checkpoint_every"])),
                train["max_requeues"])


def _preset(models: dict, name: str) -> str:
    return models[name]["preset"]


def _mathematics_data(params: dict, item: dict) -> Work:
    split = item.get("split", "extrapolate")
    data = params["data"]
    count = data["train_per_module"] if split.startswith("train") else data["test_per_module"]
    return Work("generate", count, module=item.get("module", item.get("item")), split=split,
                shards=-(-count // data["rows_per_shard"]))


def _mathematics_vocab(params: dict, item: dict) -> Work:
    return Work("read", 3 * len(params["grid"]["modules"]) * params["data"]["train_per_module"])


def _mathematics_train(params: dict, item: dict) -> Work:
    return _training(params["train"], _preset(params["models"], item["model"]))


def _mathematics_evaluate(params: dict, item: dict) -> Work:
    grid, data = params["grid"], params["data"]
    held_out = (len(grid["modules"]) + len(grid["extrapolation_modules"])) * data["test_per_module"]
    train_sample = len(grid["modules"]) * params["evaluate"]["train_sample"]  # drawn per training module
    return Work("decode", held_out + train_sample, _preset(params["models"], item["model"]))


def _two_variable_data(params: dict, item: dict) -> Work:
    return Work("generate", params["two_variable"]["data"]["size"])


def _two_variable_train(params: dict, item: dict) -> Work:
    from tprepro.experiments.two_variable.settings import two_variable_train

    return _training(two_variable_train(params), _preset(params["two_variable"]["models"], item["model"]))


def _two_variable_evaluate(params: dict, item: dict) -> Work:
    from tprepro.experiments.two_variable.data import split_sizes

    data = params["two_variable"]["data"]
    return Work("decode", split_sizes(data["size"], data["test_fraction"])["test"],
                _preset(params["two_variable"]["models"], item["model"]))


def _algolisp_generated(params: dict, task: str) -> dict | None:
    data = params["n2f"][task]["data"]
    return data["generate"] if task == "algolisp" and data.get("source") == "generate" else None


def _n2f_data(params: dict, item: dict) -> Work:
    generated = _algolisp_generated(params, item["task"])
    return Work("generate", generated["train"] + generated["test"] if generated else None)


def _n2f_train(params: dict, item: dict) -> Work:
    from tprepro.experiments.n2f.settings import n2f_train

    task = item["task"]
    return _training(n2f_train(params, task), _preset(params["n2f"][task]["models"], item["model"]))


def _n2f_evaluate(params: dict, item: dict) -> Work:
    generated = _algolisp_generated(params, item["task"])
    return Work("decode", generated["test"] if generated else None,
                _preset(params["n2f"][item["task"]]["models"], item["model"]))


def _summarization_train(params: dict, item: dict) -> Work:
    from tprepro.experiments.summarization.settings import summarization_train

    return _training(summarization_train(params), _preset(params["summarization"]["models"], item["model"]))


def _summarization_evaluate(params: dict, item: dict) -> Work:
    section = params["summarization"]
    corpus = section["corpus"]
    # the CI corpus's test split when the dataset has no release path; a release's size is not in the params
    test = round(corpus["max_examples"] * corpus["test_fraction"]) \
        if section["datasets"][item["dataset"]]["path"] is None else None
    cap = section["evaluate"]["max_documents"]
    documents = min(cap, test) if cap and test else (cap or test)
    return Work("decode", documents, _preset(section["models"], item["model"]))


def _summarization_data(params: dict, item: dict) -> Work:
    # the CI corpus's slice: a fixed job; a release's size (its subword model's work) is not in the params
    return Work("fixed") if params["summarization"]["datasets"][item["key"]]["path"] is None else Work("generate")


def _fixed(params: dict, item: dict) -> Work:
    return Work("fixed")


WORK = {
    "data": _mathematics_data, "split-index": _fixed, "vocab": _mathematics_vocab, "train": _mathematics_train,
    "evaluate": _mathematics_evaluate, "tables": _fixed, "interpret-mathematics": _fixed,
    "interpret-reconstruction": _fixed,
    "two-variable-data": _two_variable_data, "two-variable-train": _two_variable_train,
    "two-variable-evaluate": _two_variable_evaluate, "two-variable-tables": _fixed, "interpret-two-variable": _fixed,
    "n2f-data": _n2f_data, "n2f-quality": _fixed, "n2f-train": _n2f_train, "n2f-evaluate": _n2f_evaluate,
    "n2f-tables": _fixed, "interpret-n2f": _fixed,
    "summarization-corpus": _fixed, "summarization-data": _summarization_data, "summarization-train": _summarization_train,
    "summarization-evaluate": _summarization_evaluate, "summarization-tables": _fixed,
}


def work(params: dict, stage: str, item: dict) -> Work:
    """What one job of `stage` with matrix values `item` does under `params`."""
    if stage not in WORK:
        raise TpreproError(f"stage {stage}: tprepro.plan.work has no entry for it; say what its jobs do there")
    return WORK[stage](params, item)
