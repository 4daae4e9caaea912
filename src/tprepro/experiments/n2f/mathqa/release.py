"""Load the official MathQA release (dev.json / test.json) into rows and parquet.

Row columns (all strings): id ("<split>-<index>"), split, question (the Problem text
as given: whitespace-separated tokens), answer (the tuple program, format_program
of program.formula_to_program), and the raw fields rationale, options, correct,
annotated_formula, linear_formula, category.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.errors import TpreproError
from tprepro.io import atomic_path
from tprepro.experiments.n2f.mathqa.program import formula_to_program

COLUMNS = ("id", "split", "question", "answer", "rationale", "options", "correct",
           "annotated_formula", "linear_formula", "category")
SCHEMA = pa.schema([pa.field(name, pa.string(), nullable=False) for name in COLUMNS])
_RAW_KEYS = {"Problem": "question", "Rationale": "rationale", "options": "options", "correct": "correct",
             "annotated_formula": "annotated_formula", "linear_formula": "linear_formula", "category": "category"}


def _row(record: object, path: Path, split: str, index: int) -> dict[str, str]:
    where = f"{path}: record {index}"
    if not isinstance(record, dict):
        raise TpreproError(f"{where}: not a JSON object")
    row = {"id": f"{split}-{index}", "split": split}
    for key, column in _RAW_KEYS.items():
        if key not in record:
            raise TpreproError(f"{where}: missing key {key!r}")
        if not isinstance(record[key], str):
            raise TpreproError(f"{where}: key {key!r} is not a string")
        row[column] = record[key]
    if row["correct"] not in ("a", "b", "c", "d", "e"):
        raise TpreproError(f"{where}: key 'correct' is {row['correct']!r}, not a..e")
    if not row["question"].split():
        raise TpreproError(f"{where}: key 'Problem' is empty")
    try:
        row["answer"] = formula_to_program(row["linear_formula"])
    except TpreproError as exc:
        raise TpreproError(f"{where}: key 'linear_formula': {exc}") from exc
    return {column: row[column] for column in COLUMNS}


def load_release(path: str | os.PathLike, split: str) -> list[dict[str, str]]:
    """Rows of one release file (a JSON list of MathQA records)."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TpreproError(f"{path}: cannot read the MathQA release file ({exc})") from exc
    except RecursionError:
        raise TpreproError(f"{path}: cannot read the MathQA release file (JSON nested too deeply)") from None
    if not isinstance(records, list):
        raise TpreproError(f"{path}: expected a JSON list of records")
    return [_row(record, path, split, index) for index, record in enumerate(records)]


def write_parquet(rows: list[dict[str, str]], path: str | os.PathLike) -> None:
    """Write rows atomically with SCHEMA."""
    for index, row in enumerate(rows):
        missing = [column for column in COLUMNS if not isinstance(row.get(column), str)]
        if missing:
            raise TpreproError(f"{path}: row {index} ({row.get('id')!r}): missing or non-string {missing}")
    table = pa.Table.from_pylist([{c: row[c] for c in COLUMNS} for row in rows], schema=SCHEMA)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_parquet(path: str | os.PathLike) -> list[dict[str, str]]:
    """Rows of a parquet file written by write_parquet (schema checked)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise TpreproError(f"{path}: cannot read parquet ({exc})") from exc
    if table.schema.names != list(COLUMNS) or any(t != pa.string() for t in table.schema.types):
        raise TpreproError(f"{path}: schema {table.schema.names} does not match the MathQA schema")
    return table.to_pylist()
