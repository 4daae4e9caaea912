"""Answering questions with an exported model, whatever its codec: what `tprepro predict` prints
and what the MLflow pyfunc model returns.

Character models give their greedy answer; a model whose codec kind an experiment registered
(data/codecs.py) answers that experiment's way (N2F: the program and, for MathQA, its value;
summarization: a beam-searched summary).
"""

from __future__ import annotations

from pathlib import Path

import torch

from tprepro.data.codecs import kind_of, load_object
from tprepro.evaluate.evaluate import load_trained, predict
from tprepro.train.files import MODEL_FILE


def answer(model_dir: Path, questions: list[str], batch_size: int = 64, max_length: int = 64,
           device: str = "cpu") -> list[dict]:
    """One record per question: {"question", "answer"} for character models, else what the model's
    codec kind answers."""
    model, codec, _ = load_trained(Path(model_dir) / MODEL_FILE, torch.device(device))
    return answer_with(model, codec, Path(model_dir), questions, batch_size, max_length)


def answer_with(model, codec, model_dir: Path, questions: list[str], batch_size: int = 64,
                max_length: int = 64) -> list[dict]:
    """`answer` for a model already loaded (with its codec) from `model_dir`."""
    kind = kind_of(codec)
    if kind.answer is not None:
        return load_object(kind.answer)(model, codec, model_dir, questions, batch_size, max_length)
    return [{"question": question, "answer": reply}
            for question, reply in zip(questions, predict(model, codec, questions, batch_size, max_length))]
