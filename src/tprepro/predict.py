"""`tprepro predict`: ask a trained model questions (one per argument, or one per line of a file or stdin).

Character models (Mathematics, two-variable) print their greedy answer; a model whose codec an
experiment registered answers that experiment's way (N2F: the program and, for MathQA, its value;
summarization: a beam-searched summary of each document).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from tprepro.errors import TpreproError
from tprepro.evaluate.answering import answer
from tprepro.experiments import experiments
from tprepro.train.files import MODEL_FILE


def read_questions(arguments: list[str], source: BinaryIO | None, name: str | None = None) -> list[str]:
    """The questions given as arguments, else one per non-empty line of `source` (UTF-8 bytes,
    read from the file `name`); an empty question or bytes that are not UTF-8 are refused, named."""
    if arguments:
        for number, question in enumerate(arguments, 1):
            if not question.strip():
                raise TpreproError(f"question {number} is empty: ask something")
        return arguments
    if source is None:
        raise TpreproError("no question: give one as an argument, or --file FILE (- for stdin)")
    questions = []
    for number, line in enumerate(source, 1):
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise TpreproError(f"{name}: line {number} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        if text:
            questions.append(text)
    if not questions:
        raise TpreproError(f"{name}: no question in it (one per line)")
    return questions


def main(model_dir: Path, arguments: list[str], file: str | None, as_json: bool, batch_size: int,
         max_length: int, device: str, out: TextIO = sys.stdout) -> None:
    if not (model_dir / MODEL_FILE).is_file():
        raise TpreproError(f"{model_dir / MODEL_FILE}: no trained model here (run the train stage first)")
    source = None
    if file == "-":
        source = sys.stdin.buffer
    elif file is not None:
        try:
            source = open(file, "rb")
        except OSError as exc:
            raise TpreproError(f"{file}: cannot read questions ({exc.strerror})") from exc
    questions = read_questions(arguments, source, "stdin" if file == "-" else file)
    experiments()  # registers the experiments' codecs
    for record in answer(model_dir, questions, batch_size, max_length, device):
        if as_json:
            print(json.dumps(record), file=out)
        else:
            print(" | ".join(str(value) for value in record.values()), file=out)
