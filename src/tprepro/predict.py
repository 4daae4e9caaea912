"""`tprepro predict`: ask a trained model questions (one per argument, or one per line of a file or stdin).

Character models (Mathematics, two-variable) print their greedy answer; N2F models print the
program and, for MathQA, its value on the problem's numbers (the faithful executor).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO, Iterable, TextIO

from tprepro.errors import TpreproError
from tprepro.pipeline import MODEL_FILE, read_train_metrics


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


def _task_of(model_dir: Path) -> str | None:
    """The N2F task a model was trained for (its run name is `<task>/<model>-s<seed>`), if any."""
    try:
        name = read_train_metrics(model_dir).get("name", "")
    except TpreproError:
        return None
    return name.split("/", 1)[0] if "/" in name else None


def answer(model_dir: Path, questions: list[str], batch_size: int = 64, max_length: int = 64,
           device: str = "cpu") -> Iterable[dict]:
    """One record per question: {"question", "answer"} or, for N2F models, {"question", "program", ["value"]}."""
    import torch

    from tprepro.evaluate.evaluate import load_trained, predict

    model, codec, _ = load_trained(model_dir / MODEL_FILE, torch.device(device))
    if not hasattr(codec, "decode_program"):  # a character vocabulary
        for question, reply in zip(questions, predict(model, codec, questions, batch_size, max_length)):
            yield {"question": question, "answer": reply}
        return
    from tprepro.experiments.n2f.stages import predict_programs
    from tprepro.experiments.n2f.tuples import format_program

    task = _task_of(model_dir)
    for question, program in zip(questions, predict_programs(model, codec, questions, batch_size, max_length)):
        record = {"question": question, "program": format_program(program)}
        if task == "mathqa":
            from tprepro.experiments.n2f.mathqa.executor import execute
            from tprepro.experiments.n2f.mathqa.numbers import extract_numbers

            outcome = execute(list(program), extract_numbers(question))
            record["value"] = outcome.value if outcome.value is not None else f"fails: {outcome.failure}"
        yield record


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
    for record in answer(model_dir, questions, batch_size, max_length, device):
        if as_json:
            print(json.dumps(record), file=out)
        else:
            print(" | ".join(str(value) for value in record.values()), file=out)
