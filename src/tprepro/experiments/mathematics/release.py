"""Load the released `mathematics_dataset-v1.0` text files into parquet shards.

The release holds `<root>/<split>/<module>.txt`, with each problem's question and
answer on consecutive lines. Files are streamed, one shard in memory at a time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterator

from tprepro.experiments.mathematics.modules import difficulty_of, validate_module
from tprepro.data.shards import write_dataset
from tprepro.errors import TpreproError


def release_file(release_root: str | os.PathLike, split: str, module: str) -> Path:
    """Path of the text file holding (split, module) in a release tree."""
    return Path(release_root) / split / f"{module}.txt"


def _lines(path: Path, digest) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without newline), feeding the raw bytes to `digest`."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            digest.update(raw)
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise TpreproError(f"{path}:{number}: not valid UTF-8 ({exc})") from exc


def read_pairs(path: Path, digest=None) -> Iterator[tuple[str, str]]:
    """Stream (question, answer) pairs from one release file, validating as it goes."""
    digest = digest if digest is not None else hashlib.sha256()
    question = None
    number = 0
    for number, text in _lines(path, digest):
        is_question = number % 2 == 1
        if not text.strip():
            kind = "question" if is_question else "answer"
            raise TpreproError(f"{path}:{number}: empty {kind} line")
        if is_question:
            question = text
        else:
            yield question, text
    if number == 0:
        raise TpreproError(f"{path}: file is empty")
    if number % 2:
        raise TpreproError(f"{path}: has {number} lines, an odd number (the question on line {number} has no answer)")


def _batches(pairs: Iterator[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    batch = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def load_release(
    release_root: str | os.PathLike, split: str, module: str, out: str | os.PathLike, rows_per_shard: int
) -> None:
    """Convert one release file into the dataset directory `out` (source="release").

    Any bad input raises TpreproError and leaves `out` as it was.
    """
    validate_module(split, module)
    if rows_per_shard < 1:
        raise TpreproError(f"rows_per_shard must be >= 1 (got {rows_per_shard})")
    path = release_file(release_root, split, module)
    if not path.is_file():
        raise TpreproError(f"{path}: release file not found (is data.release_root={release_root} right?)")
    difficulty = difficulty_of(split)
    digest = hashlib.sha256()
    shards = ([{"question": q, "answer": a, "module": module, "split": split, "difficulty": difficulty}
               for q, a in batch] for batch in _batches(read_pairs(path, digest), rows_per_shard))
    write_dataset(Path(out), shards, split=split, module=module, source="release",
                  release_file=f"{split}/{module}.txt", release_sha256=digest.hexdigest)
