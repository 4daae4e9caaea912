"""`tprepro predict`: ask a trained model questions (one per argument, or one per line of a file or stdin).

Character models (Mathematics, two-variable) print their greedy answer; a model whose codec an
experiment registered answers that experiment's way (N2F: the program and, for MathQA, its value;
summarization: a beam-searched summary of each document).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from tprepro.errors import TpreproError
from tprepro.evaluate.answering import answer
from tprepro.experiments import experiments
from tprepro.train.files import MODEL_FILE, no_trained_model


MAX_QUESTION_BYTES = 1 << 20  # a question or document of 1 MiB is far beyond any model's positions


def from_command_line(argument: str) -> str:
    """A command-line argument as text: bytes that are not UTF-8 (which Python keeps as lone surrogates,
    unprintable) become U+FFFD, the replacement character."""
    return os.fsencode(argument).decode("utf-8", "replace")


def _checked(text: str, size: int, where: str) -> str:
    if size > MAX_QUESTION_BYTES:
        raise TpreproError(f"{where} is longer than {MAX_QUESTION_BYTES:,} bytes ({size:,} or more): "
                           f"no model reads that much; shorten it")
    if "\0" in text:
        raise TpreproError(f"{where} holds a NUL byte at character {text.index(chr(0)) + 1} (binary input?): "
                           "questions are text")
    return text


def read_questions(arguments: list[str], source: BinaryIO | None, name: str | None = None) -> list[str]:
    """The questions given as arguments (bytes that are not UTF-8 replaced by U+FFFD), else one per
    non-empty line of `source` (UTF-8 bytes, read from the file `name`); an empty question, a NUL byte,
    a line over MAX_QUESTION_BYTES (refused as soon as that much is read) or, in a file, bytes that are
    not UTF-8 are refused, naming the question's number or the file and line."""
    if arguments:
        questions = []
        for number, question in enumerate(arguments, 1):
            question = from_command_line(question)
            _checked(question, len(question.encode("utf-8")), f"question {number}")
            if not question.strip():
                raise TpreproError(f"question {number} is empty: ask something")
            questions.append(question)
        return questions
    if source is None:
        raise TpreproError("no question: give one as an argument, or --file FILE (- for stdin)")
    questions = []
    number = 0
    while line := source.readline(MAX_QUESTION_BYTES + 2):  # never more than one allowed line and its end
        number += 1
        body = line.rstrip(b"\r\n")
        if len(body) > MAX_QUESTION_BYTES:
            raise TpreproError(f"{name}: line {number} is longer than {MAX_QUESTION_BYTES:,} bytes: no model "
                               f"reads that much; shorten it (one question per line)")
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise TpreproError(f"{name}: line {number} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        _checked(text, len(body), f"{name}: line {number}")
        if text:
            questions.append(text)
    if not questions:
        raise TpreproError(f"{name}: no question in it (one per line)")
    return questions


def main(model_dir: Path, arguments: list[str], file: str | None, as_json: bool, batch_size: int,
         max_length: int, device: str, out: TextIO = sys.stdout) -> None:
    if not (model_dir / MODEL_FILE).is_file():
        raise no_trained_model(model_dir)
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
