"""Loaders of the datasets' released forms into the project's parquet shards.

Every loader returns rows {document, summary, id, split}; `write_dataset` writes one
split as shards plus manifest. A malformed file raises TpreproError naming the file
and, for line-based formats, the line.

- XSum / CNN-DM as Hugging Face `datasets` exports: `<split>.jsonl` or `<split>.parquet`
  with document/summary (XSum) or article/highlights (CNN-DM) and id.
- CNN-DM `.story` files: `*/stories/<sha1(url)>.story` with `@highlight` blocks, split by
  `url_lists/all_{train,val,test}.txt`.
- Wikihow `wikihowAll.csv` (headline, title, text), cleaned, split by the repository's
  `all_{train,val,test}.txt` title lists when present, else by a hash of the title.
- arXiv scientific_papers JSON lines (`train.txt`, `val.txt`, `test.txt`) with
  article_text and abstract_text lists.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.data import shards
from tprepro.errors import TpreproError
from tprepro.experiments.summarization import SCHEMA, SPLITS, VALIDATION
from tprepro.experiments.summarization.corpus import (ARXIV_SPLIT_FILES, URL_LISTS, WIKIHOW_SPLIT_FILES, split_of,
                                          story_name, wikihow_title_key)

# The column names of each Hugging Face export: (document, summary).
HF_COLUMNS = {"xsum": ("document", "summary"), "cnndm": ("article", "highlights")}
FORMATS = ("huggingface", "stories", "wikihow_csv", "arxiv_jsonl")


def _row(document: str, summary: str, example_id: str, split: str) -> dict:
    return {"document": document.strip(), "summary": summary.strip(), "id": str(example_id), "split": split}


def _text(value, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise TpreproError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return value


def _json_lines(path: Path):
    """(line number, object) of a JSON-lines file; blank lines are skipped."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TpreproError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise TpreproError(f"{path}:{number}: expected a JSON object")
            yield number, record


def _require(record: dict, keys, where: str) -> None:
    missing = [k for k in keys if k not in record]
    if missing:
        raise TpreproError(f"{where}: missing key(s) {', '.join(map(repr, missing))}")


def _split_file(directory: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    raise TpreproError(f"{directory}: none of {', '.join(names)} found")


def load_huggingface(directory: str | Path, columns: tuple[str, str]) -> dict[str, list[dict]]:
    """A `datasets` export: `<split>.jsonl` (or .json) or `<split>.parquet` per split."""
    directory = Path(directory)
    document_key, summary_key = columns
    out = {}
    for split in SPLITS:
        names = tuple(f"{s}.{ext}" for s in ((split, "val") if split == VALIDATION else (split,))
                      for ext in ("jsonl", "json", "parquet"))
        path = _split_file(directory, names)
        rows = []
        if path.suffix == ".parquet":
            try:
                table = pq.read_table(path)
            except (pa.ArrowException, OSError) as exc:
                raise TpreproError(f"{path}: not a readable parquet file ({exc})") from exc
            missing = [k for k in (document_key, summary_key, "id") if k not in table.column_names]
            if missing:
                raise TpreproError(f"{path}: missing column(s) {', '.join(map(repr, missing))}")
            for index, record in enumerate(table.select([document_key, summary_key, "id"]).to_pylist()):
                where = f"{path}: row {index}"
                rows.append(_row(_text(record[document_key], where, document_key),
                                 _text(record[summary_key], where, summary_key), record["id"], split))
        else:
            for number, record in _json_lines(path):
                where = f"{path}:{number}"
                _require(record, (document_key, summary_key, "id"), where)
                rows.append(_row(_text(record[document_key], where, document_key),
                                 _text(record[summary_key], where, summary_key), record["id"], split))
        out[split] = rows
    return out


def parse_story(path: Path) -> tuple[str, str]:
    """(article, highlights joined by ' . ' as sentences) of one CNN/DM .story file."""
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except UnicodeDecodeError as exc:
        raise TpreproError(f"{path}: not UTF-8 text ({exc})") from exc
    article, highlights, in_highlight = [], [], False
    for line in lines:
        if not line:
            continue
        if line.startswith("@highlight"):
            in_highlight = True
        elif in_highlight:
            highlights.append(line)
            in_highlight = False
        else:
            article.append(line)
    if not highlights:
        raise TpreproError(f"{path}: no @highlight (not a CNN/DM story file)")
    return "\n".join(article), "\n".join(highlights)


def load_stories(directory: str | Path) -> dict[str, list[dict]]:
    """CNN/DM stories under `directory` (cnn/stories, dailymail/stories) split by url_lists/."""
    directory = Path(directory)
    stories = {p.name: p for p in sorted(directory.glob("*/stories/*.story"))}
    out = {}
    for split in SPLITS:
        url_list = directory / "url_lists" / URL_LISTS[split]
        if not url_list.is_file():
            raise TpreproError(f"{url_list}: missing URL list of the {split} split")
        rows = []
        for number, line in enumerate(url_list.read_text(encoding="utf-8").splitlines(), 1):
            url = line.strip()
            if not url:
                continue
            name = story_name(url)
            if name not in stories:
                raise TpreproError(f"{url_list}:{number}: no story file {name} for {url}")
            article, highlights = parse_story(stories[name])
            rows.append(_row(article, highlights, name.removesuffix(".story"), split))
        out[split] = rows
    return out


def clean_wikihow_headline(headline: str) -> str:
    """The export's headline: one line per summary sentence, each led by a newline and ended by ','."""
    lines = [line.strip().removesuffix(",").strip() for line in headline.split("\n")]
    return " ".join(line for line in lines if line)


def clean_wikihow_text(text: str) -> str:
    """Drop the export's stray commas after sentence ends and collapse runs of blank lines."""
    text = re.sub(r"\.\s*\n\s*,", ".\n", text)
    return "\n".join(line.strip() for line in text.split("\n") if line.strip())


def load_wikihow(path: str | Path, fractions: dict[str, float]) -> dict[str, list[dict]]:
    """`wikihowAll.csv`, cleaned; rows with an empty text or headline are dropped (as is usual).

    Splits follow all_train/all_val/all_test.txt beside the CSV when they exist (a title not
    listed in any is left out); otherwise a hash of the title with `fractions`.
    """
    path = Path(path)
    lists = {split: path.parent / name for split, name in WIKIHOW_SPLIT_FILES.items()}
    assigned: dict[str, str] | None = None
    if all(p.is_file() for p in lists.values()):
        assigned = {}
        for split, list_path in lists.items():
            for title in list_path.read_text(encoding="utf-8").split():
                assigned[title] = split
    out: dict[str, list[dict]] = {split: [] for split in SPLITS}
    csv.field_size_limit(sys.maxsize)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, strict=True)
            header = next(reader, None)
            if header is None or not {"headline", "title", "text"} <= set(header):
                raise TpreproError(f"{path}:1: expected a header with headline, title, text; got {header}")
            index = {name: header.index(name) for name in ("headline", "title", "text")}
            line = reader.line_num
            for record in reader:
                if len(record) != len(header):
                    raise TpreproError(f"{path}:{line + 1}: {len(record)} fields, the header has {len(header)}")
                line = reader.line_num
                headline = clean_wikihow_headline(record[index["headline"]])
                title = record[index["title"]].strip()
                text = clean_wikihow_text(record[index["text"]])
                if not headline or not text or not title:
                    continue
                split = (assigned.get(wikihow_title_key(title)) if assigned is not None
                         else split_of(title, fractions))
                if split is not None:
                    out[split].append(_row(text, headline, title, split))
    except csv.Error as exc:
        raise TpreproError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise TpreproError(f"{path}: not UTF-8 text ({exc})") from exc
    return out


def _sentences(value, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise TpreproError(f"{where}: {key!r} must be a list of strings")
    return value


def load_arxiv(directory: str | Path) -> dict[str, list[dict]]:
    """scientific_papers JSON lines: abstract sentences are wrapped in <S> ... </S>."""
    directory = Path(directory)
    out = {}
    for split, name in ARXIV_SPLIT_FILES.items():
        path = directory / name
        if not path.is_file():
            raise TpreproError(f"{path}: missing arXiv {split} file")
        rows = []
        for number, record in _json_lines(path):
            where = f"{path}:{number}"
            _require(record, ("article_id", "article_text", "abstract_text"), where)
            article = "\n".join(_sentences(record["article_text"], where, "article_text"))
            abstract = " ".join(re.sub(r"</?S>", "", s).strip()
                                for s in _sentences(record["abstract_text"], where, "abstract_text"))
            rows.append(_row(article, abstract, record["article_id"], split))
        out[split] = rows
    return out


def load_release(dataset: str, settings: dict, fractions: dict[str, float]) -> dict[str, list[dict]]:
    """The rows of `dataset` per split, read the way `settings["format"]` says from `settings["path"]`."""
    fmt, path = settings["format"], Path(settings["path"])
    if not path.exists():
        raise TpreproError(f"summarization.datasets.{dataset}.path: {path} does not exist")
    if fmt == "huggingface":
        columns = settings.get("columns") or HF_COLUMNS.get(dataset, ("document", "summary"))
        return load_huggingface(path, tuple(columns))
    if fmt == "stories":
        return load_stories(path)
    if fmt == "wikihow_csv":
        return load_wikihow(path, fractions)
    if fmt == "arxiv_jsonl":
        return load_arxiv(path)
    raise TpreproError(f"summarization.datasets.{dataset}.format: unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def write_dataset(rows: list[dict], directory: Path, rows_per_shard: int, **meta) -> None:
    """One split as parquet shards plus manifest (an empty split as one empty shard)."""
    chunks = (rows[start : start + rows_per_shard] for start in range(0, max(len(rows), 1), rows_per_shard))
    shards.write_dataset(directory, chunks, SCHEMA, **meta)
