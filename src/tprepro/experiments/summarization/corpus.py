"""A real summarization corpus that every machine has: the standard library's docstrings.

A docstring's first paragraph summarises the rest of it, so each docstring with a short
first paragraph and a longer remainder becomes one (summary, document) pair. The source
files are parsed (never imported) in sorted path order, so the corpus is a pure function
of the installed Python. Splits come from a hash of each example's id.

`write_releases` writes the examples in the released formats of the four datasets
(XSum and CNN/DM as Hugging Face exports, CNN/DM .story files with URL lists, Wikihow's
wikihowAll.csv, arXiv's scientific_papers JSON lines), so the loaders read the same
kind of files the real releases are. Each dataset gets its own share of the examples
(`release_of`, a hash of the id), so the datasets differ as the real ones do; CNN/DM's two
formats hold the same share.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import inspect
import io
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.io import atomic_directory
from tprepro.experiments.summarization import SPLITS, TEST, TRAIN, VALIDATION

SKIPPED_DIRECTORIES = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
# The split names of each release's files.
ARXIV_SPLIT_FILES = {TRAIN: "train.txt", VALIDATION: "val.txt", TEST: "test.txt"}
URL_LISTS = {TRAIN: "all_train.txt", VALIDATION: "all_val.txt", TEST: "all_test.txt"}
WIKIHOW_SPLIT_FILES = URL_LISTS  # the Wikihow repository's title lists have the same names


@dataclass(frozen=True)
class Example:
    id: str  # dotted path: module.Class.function
    summary: str  # the docstring's first paragraph, on one line
    document: str  # the remaining paragraphs, one per line
    split: str


def split_of(example_id: str, fractions: dict[str, float]) -> str:
    """A split chosen by a hash of the id: stable whatever else the corpus holds."""
    point = int.from_bytes(hashlib.sha256(example_id.encode()).digest()[:8], "big") / 2**64
    if point < fractions[TEST]:
        return TEST
    if point < fractions[TEST] + fractions[VALIDATION]:
        return VALIDATION
    return TRAIN


RELEASES = ("xsum", "cnndm", "wikihow", "arxiv")


def release_of(example_id: str) -> str:
    """The dataset whose CI files carry this example: a hash of the id, independent of the split's."""
    digest = hashlib.sha256(f"release\0{example_id}".encode()).digest()
    return RELEASES[digest[0] % len(RELEASES)]


def _paragraphs(docstring: str) -> list[str]:
    text = inspect.cleandoc(docstring)
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]


def _docstrings(tree: ast.Module, module: str):
    """(dotted id, docstring) of the module and every class and function in it."""
    stack = [(tree, module)]
    while stack:
        node, name = stack.pop(0)
        docstring = ast.get_docstring(node, clean=False)
        if docstring:
            yield name, docstring
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append((child, f"{name}.{child.name}"))


def stdlib_examples(max_examples: int, fractions: dict[str, float], min_document_words: int = 20,
                    summary_words: tuple[int, int] = (4, 40), root: Path | None = None) -> list[Example]:
    """Up to `max_examples` (summary, document) pairs from the standard library's docstrings."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    examples: list[Example] = []
    seen: set[str] = set()
    files = sorted(p for p in root.rglob("*.py")
                   if not SKIPPED_DIRECTORIES & set(p.relative_to(root).parts[:-1]))
    for path in files:
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # e.g. lib2to3's Python 2 fixtures
        for example_id, docstring in _docstrings(tree, module):
            paragraphs = _paragraphs(docstring)
            if len(paragraphs) < 2 or example_id in seen:
                continue
            summary, document = paragraphs[0], "\n".join(paragraphs[1:])
            if not summary_words[0] <= len(summary.split()) <= summary_words[1]:
                continue
            if len(document.split()) < min_document_words:
                continue
            seen.add(example_id)
            examples.append(Example(example_id, summary, document, split_of(example_id, fractions)))
            if len(examples) == max_examples:
                return examples
    return examples


# ---- the release formats ----------------------------------------------------------------------
def _jsonl(records) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)


def story_url(example: Example) -> str:
    return f"https://docs.python.org/3/library/{example.id}"


def story_name(url: str) -> str:
    """CNN/DM names each story file by the sha1 of its URL."""
    return hashlib.sha1(url.encode()).hexdigest() + ".story"


def wikihow_title_key(title: str) -> str:
    """The Wikihow split lists name articles by their title without spaces."""
    return "".join(title.split())


def write_releases(examples: list[Example], out: Path) -> dict[str, Path]:
    """Write `examples` in every release format under `out`; return {format: directory}."""
    def share(release: str) -> tuple[list[Example], dict[str, list[Example]]]:
        mine = [e for e in examples if release_of(e.id) == release]
        return mine, {split: [e for e in mine if e.split == split] for split in SPLITS}

    with atomic_directory(out) as tmp:
        _, by_split = share("xsum")
        (tmp / "xsum").mkdir()
        for split, rows in by_split.items():
            records = [{"document": e.document, "summary": e.summary, "id": e.id} for e in rows]
            (tmp / "xsum" / f"{split}.jsonl").write_text(_jsonl(records), encoding="utf-8")

        (tmp / "cnndm").mkdir()
        _, by_split = share("cnndm")
        schema = pa.schema([("article", pa.string()), ("highlights", pa.string()), ("id", pa.string())])
        for split, rows in by_split.items():
            table = pa.Table.from_pylist([{"article": e.document, "highlights": e.summary, "id": e.id}
                                          for e in rows], schema=schema)
            pq.write_table(table, tmp / "cnndm" / f"{split}.parquet", compression="zstd")

        stories = tmp / "cnndm_stories" / "cnn" / "stories"
        stories.mkdir(parents=True)
        (tmp / "cnndm_stories" / "url_lists").mkdir()
        for split, rows in by_split.items():
            urls = [story_url(e) for e in rows]
            (tmp / "cnndm_stories" / "url_lists" / URL_LISTS[split]).write_text(
                "".join(u + "\n" for u in urls), encoding="utf-8")
            for url, e in zip(urls, rows):
                body = "\n\n".join(e.document.split("\n")) + f"\n\n@highlight\n\n{e.summary}\n"
                (stories / story_name(url)).write_text(body, encoding="utf-8")

        (tmp / "wikihow").mkdir()
        wikihow, by_split = share("wikihow")
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["headline", "title", "text"])
        for e in wikihow:  # the export's quirks: each headline line starts with "\n" and ends with ","
            writer.writerow([f"\n{e.summary},", e.id, e.document])
        (tmp / "wikihow" / "wikihowAll.csv").write_text(buffer.getvalue(), encoding="utf-8")
        for split, rows in by_split.items():
            (tmp / "wikihow" / WIKIHOW_SPLIT_FILES[split]).write_text(
                "".join(wikihow_title_key(e.id) + "\n" for e in rows), encoding="utf-8")

        (tmp / "arxiv").mkdir()
        _, by_split = share("arxiv")
        for split, rows in by_split.items():
            records = [{"article_id": e.id, "article_text": e.document.split("\n"),
                        "abstract_text": [f"<S> {e.summary} </S>"], "labels": None,
                        "section_names": [], "sections": []} for e in rows]
            (tmp / "arxiv" / ARXIV_SPLIT_FILES[split]).write_text(_jsonl(records), encoding="utf-8")
    return {name: out / name for name in ("xsum", "cnndm", "cnndm_stories", "wikihow", "arxiv")}
