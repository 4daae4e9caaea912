"""Per-module accuracy by batched greedy decoding: a sample counts only if the whole answer matches."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from tprepro.data.batching import encode_questions
from tprepro.data.codecs import codec_from_state
from tprepro.data.shards import Dataset, iter_rows, read_columns
from tprepro.data.vocab import Vocab
from tprepro.evaluate.decode import greedy_decode
from tprepro.models.interfaces import Codec
from tprepro.models.registry import stored_model_config
from tprepro.models.registry import build_model
from tprepro.train.checkpoint import load_checkpoint

TRAIN = "train"  # the split label of the training-accuracy sample


@dataclass(frozen=True)
class EvalSet:
    split: str  # interpolate | extrapolate | train
    module: str
    rows: list[tuple[str, str]]  # (question, answer)


def load_trained(path: str | Path, device: torch.device) -> tuple[torch.nn.Module, Codec, dict]:
    """The exported model, its codec (data/codecs.py: the kind its stored state is) and the exported metadata."""
    state = load_checkpoint(path)
    vocab = codec_from_state(state["vocab"], str(path))
    model = build_model(stored_model_config(state["model_config"]), **vocab.model_sizes())
    model.load_state_dict(state["model"])
    return model.to(device).eval(), vocab, state


def predict_ids(model, vocab: Vocab, questions: Sequence[str], batch_size: int, max_len: int) -> list[list[int]]:
    """Greedy output ids for `questions` (end symbol and padding included), decoded in
    length-sorted batches (little padding)."""
    device = next(model.parameters()).device
    order = sorted(range(len(questions)), key=lambda i: len(questions[i]))
    outputs: list[list[int]] = [[] for _ in questions]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src = encode_questions([questions[i] for i in chunk], vocab).to(device)  # [B, S]
        out = greedy_decode(model, src, vocab.bos_id, vocab.eos_id, max_len=max_len + 1)  # [B, L]
        for i, ids in zip(chunk, out.tolist()):
            outputs[i] = ids
    return outputs


def predict(model, vocab: Vocab, questions: Sequence[str], batch_size: int, max_len: int) -> list[str]:
    """Greedy answers for `questions` as text (special symbols shown by name, see Vocab.decode)."""
    return [vocab.decode(ids) for ids in predict_ids(model, vocab, questions, batch_size, max_len)]


def score(model, vocab: Vocab, eval_set: EvalSet, batch_size: int, max_len: int) -> dict:
    """Exact match per sample (Vocab.exact_match): a special symbol inside the answer makes it wrong."""
    questions = [q for q, _ in eval_set.rows]
    outputs = predict_ids(model, vocab, questions, batch_size, max_len)
    correct = sum(vocab.exact_match(ids, a) for ids, (_, a) in zip(outputs, eval_set.rows))
    n = len(eval_set.rows)
    return {"module": eval_set.module, "split": eval_set.split, "n": n, "correct": correct,
            "accuracy": correct / n if n else float("nan")}


def full_set(split: str, module: str, dataset: Dataset) -> EvalSet:
    return EvalSet(split, module, [(r["question"], r["answer"]) for r in iter_rows(dataset)])


def sample_rows(datasets: Sequence[Dataset], size: int, rng: random.Random) -> list[tuple[str, str]]:
    """`size` (question, answer) rows drawn by `rng` evenly from the first shard of each dataset."""
    if size <= 0 or not datasets:
        return []
    per_dataset = -(-size // len(datasets))
    rows: list[tuple[str, str]] = []
    for dataset in datasets:
        table = read_columns(dataset.files[0], ("question", "answer"))
        pairs = list(zip(table.column("question").to_pylist(), table.column("answer").to_pylist()))
        rows.extend(rng.sample(pairs, min(per_dataset, len(pairs))))
    return rows[:size]


def train_sample(module: str, datasets: Sequence[Dataset], size: int, seed: int) -> EvalSet:
    """A seeded sample of `size` training rows of one module, drawn evenly over its difficulty splits."""
    return EvalSet(TRAIN, module, sample_rows(datasets, size, random.Random(f"{seed}:train-sample:{module}")))
