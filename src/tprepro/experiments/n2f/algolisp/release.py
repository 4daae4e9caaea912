"""AlgoLisp metaset3 JSONL records -> rows for training and evaluation, and parquet I/O.

A record holds `text` (token list), `short_tree` (nested lists of strings), `args`
({name: type}), `return_type`, `tests` ([{input: {...}, output: ...}]), `funcs`, `tags`
and `nodes`. A row keeps the question (`" ".join(text)`), the answer (the tree's command
sequence, `program.tree_to_text`, arity 3) and every raw field as a JSON string, so the
tests and the tree travel with the row and `row_to_record` gives the record back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.experiments.n2f.algolisp.program import tree_to_text
from tprepro.data.shards import write_shard
from tprepro.errors import TpreproError
from tprepro.io import atomic_write_text

RAW_FIELDS = ("short_tree", "args", "return_type", "tests", "funcs", "tags", "nodes")
REQUIRED = ("text", "short_tree", "args", "return_type", "tests")

SCHEMA = pa.schema(
    [pa.field(name, pa.string(), nullable=False) for name in ("id", "split", "question", "answer")]
    + [pa.field(name, pa.string(), nullable=False) for name in RAW_FIELDS]
)


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def record_to_row(record: dict, split: str, index: int, where: str = "record") -> dict:
    """One row from one record; `where` names the record in error messages."""
    if not isinstance(record, dict):
        raise TpreproError(f"{where}: expected a JSON object, got {type(record).__name__}")
    for key in REQUIRED:
        if key not in record:
            raise TpreproError(f"{where}: missing key {key!r}")
    text = record["text"]
    if not isinstance(text, list) or not all(isinstance(token, str) for token in text):
        raise TpreproError(f"{where}: key 'text' must be a list of strings")
    if not isinstance(record["args"], dict):
        raise TpreproError(f"{where}: key 'args' must be an object")
    if not isinstance(record["tests"], list):
        raise TpreproError(f"{where}: key 'tests' must be a list")
    for number, test in enumerate(record["tests"]):
        if not isinstance(test, dict) or not isinstance(test.get("input"), dict) or "output" not in test:
            raise TpreproError(f"{where}: key 'tests': test {number} must be an object with an 'input' object "
                               f"and an 'output'")
    try:
        answer = tree_to_text(record["short_tree"])
    except TpreproError as exc:
        raise TpreproError(f"{where}: key 'short_tree': {exc}") from None
    row = {"id": f"{split}-{index}", "split": split, "question": " ".join(text), "answer": answer}
    for key in RAW_FIELDS:
        row[key] = _dumps(record.get(key, [] if key in ("funcs", "tags", "nodes") else None))
    return row


def row_to_record(row: dict) -> dict:
    """The record fields of a row (raw JSON columns decoded; text re-split from the question)."""
    record = {key: json.loads(row[key]) for key in RAW_FIELDS}
    record["text"] = row["question"].split(" ") if row["question"] else []
    return record


def load_jsonl(path: str | os.PathLike, split: str) -> list[dict]:
    """Rows of a metaset3 JSONL file (blank lines skipped); errors name the file and line."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
                rows.append(record_to_row(record, split, len(rows), where))
            except json.JSONDecodeError as exc:
                raise TpreproError(f"{where}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise TpreproError(f"{where}: JSON nested too deeply to read") from None
    return rows


def write_parquet(rows: list[dict], path: str | os.PathLike) -> None:
    """Write rows (SCHEMA) as one zstd parquet file, atomically."""
    missing = [name for name in SCHEMA.names if rows and name not in rows[0]]
    if missing:
        raise TpreproError(f"{path}: rows lack columns {missing}")
    write_shard(rows, Path(path), schema=SCHEMA)


def read_parquet(path: str | os.PathLike) -> list[dict]:
    """Rows of a file written by write_parquet."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TpreproError(f"{path}: not a readable parquet file ({exc})") from None
    missing = [name for name in SCHEMA.names if name not in table.column_names]
    if missing:
        raise TpreproError(f"{path}: missing columns {missing}")
    return table.select(SCHEMA.names).to_pylist()


def write_jsonl(records: list[dict], path: str | os.PathLike) -> None:
    """Write records one JSON object a line (sorted keys: equal records give equal bytes), atomically."""
    atomic_write_text(path, "".join(json.dumps(record, sort_keys=True) + "\n" for record in records))
