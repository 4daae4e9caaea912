"""The parquet shard format shared by every dataset stage.

A dataset directory holds `part-00000.parquet`, `part-00001.parquet`, ... and a
`manifest.json` naming each shard with its row count and sha256, so readers can
detect missing or corrupt shards before training starts. Each kind of dataset declares its
columns once, as the pyarrow schema its writer passes to `write_dataset` (SCHEMA here for the
Mathematics and two-variable datasets; the N2F tasks' and summarization's beside their writers),
and its readers pass the same schema to `open_dataset`, which refuses a shard with other columns
or types, naming the file and the column.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.errors import TpreproError
from tprepro.io import atomic_directory, atomic_path, atomic_write_text, sha256_file

SCHEMA = pa.schema(
    [
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("difficulty", pa.string(), nullable=False),
    ]
)
MANIFEST = "manifest.json"
COMPRESSION = "zstd"
# Rows per parquet row group. A reader decodes a whole row group at a time, so a training stream's
# readers hold about this many rows each (or `train.read_rows`, where larger), whatever the shard size.
# pyarrow's batches span row groups, so the batches a reader sees do not depend on it.
ROW_GROUP_ROWS = 1024


def shard_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def write_shard(rows: Sequence[dict], path: Path, schema: pa.Schema = SCHEMA) -> None:
    """Write `rows` (dicts with the schema's keys) as one zstd parquet file, atomically.

    Every dataset has `question` and `answer` columns (what training streams); the
    Mathematics schema adds module/split/difficulty, the N2F datasets their own fields.
    """
    table = pa.Table.from_pylist(list(rows), schema=schema)
    with atomic_path(path) as tmp:
        # Fixed writer settings so that equal rows give equal bytes.
        pq.write_table(table, tmp, compression=COMPRESSION, write_statistics=False, row_group_size=ROW_GROUP_ROWS)


def parquet_rows(path: Path) -> int:
    """Row count from a shard's parquet footer, naming the file if it is not parquet."""
    try:
        with pq.ParquetFile(path) as handle:
            return handle.metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise TpreproError(f"{path}: not a readable parquet shard ({exc})") from exc


def check_shard_schema(path: Path, schema: pa.Schema) -> None:
    """The columns and types in the shard's parquet footer are `schema`'s, and a column the schema declares
    non-null holds no null, else an error naming the file and the first column that differs."""
    try:
        with pq.ParquetFile(path) as handle:
            found = handle.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise TpreproError(f"{path}: not a readable parquet shard ({exc})") from exc
    for field in schema:
        if field.name not in found.names:
            raise TpreproError(f"{path}: column {field.name!r} is missing (the dataset declares "
                               f"{', '.join(schema.names)}; found {', '.join(found.names)})")
        if not found.field(field.name).type.equals(field.type):
            raise TpreproError(f"{path}: column {field.name!r} is {found.field(field.name).type}, "
                               f"the dataset declares {field.type}")
    extra = [name for name in found.names if name not in schema.names]
    if extra:
        raise TpreproError(f"{path}: column {extra[0]!r} is not one the dataset declares "
                           f"({', '.join(schema.names)})")
    # Nullability: the project's writers store non-null columns as parquet's required fields, which hold no
    # nulls; a column another writer stored as optional is read and refused if it holds one.
    optional = [field.name for field in schema if not field.nullable and found.field(field.name).nullable]
    if optional:
        table = read_columns(path, optional)
        for name in optional:
            column = table.column(name)
            if column.null_count:
                row = column.is_null().to_pylist().index(True)
                raise TpreproError(f"{path}: column {name!r} holds a null value (row {row + 1} of "
                                   f"{table.num_rows}); the dataset declares it non-null")


def write_manifest(directory: Path, shard_paths: Iterable[Path], **meta) -> None:
    """Record every shard's rows and sha256 (plus `meta`) in `directory/manifest.json`."""
    shards = []
    for path in shard_paths:
        rows = parquet_rows(path)
        shards.append({"file": path.name, "rows": rows, "sha256": sha256_file(path)})
    body = {**meta, "rows": sum(s["rows"] for s in shards), "shards": shards}
    atomic_write_text(directory / MANIFEST, json.dumps(body, indent=2, sort_keys=True) + "\n")


def write_dataset(directory: Path, shards: Iterable[Sequence[dict]], schema: pa.Schema = SCHEMA, **meta) -> Path:
    """Write each element of `shards` (a list of rows) as one shard, then the manifest with `meta`.

    The directory appears only once complete (tprepro.io.atomic_directory); `shards` may be a
    generator, so only one shard's rows are held at a time. A callable value in `meta` is called
    after the last shard (e.g. a digest of the input read meanwhile). Every dataset writer goes
    through here.
    """
    directory = Path(directory)
    with atomic_directory(directory) as tmp:
        paths = []
        for index, rows in enumerate(shards):
            paths.append(tmp / shard_name(index))
            write_shard(rows, paths[-1], schema)
        write_manifest(tmp, paths, **{key: value() if callable(value) else value for key, value in meta.items()})
    return directory


@dataclass(frozen=True)
class Dataset:
    """A validated dataset directory: its manifest, shard files and the sha256 of each shard's bytes."""

    directory: Path
    manifest: dict
    shard_hashes: tuple[str, ...] | None = None  # hashed from the files (None: opened unverified)

    @property
    def files(self) -> list[Path]:
        return [self.directory / s["file"] for s in self.manifest["shards"]]

    @property
    def rows(self) -> int:
        return int(self.manifest["rows"])

    def fingerprint(self) -> str:
        """One hash over the shards' sha256s, taken from the bytes on disk (never only from the
        manifest): identifies the data a model saw."""
        hashes = self.shard_hashes if self.shard_hashes is not None else [sha256_file(p) for p in self.files]
        return hashlib.sha256("".join(hashes).encode()).hexdigest()


def open_dataset(directory: str | Path, verify: bool = True, allow_empty: bool = False,
                 schema: pa.Schema = SCHEMA) -> Dataset:
    """Open a dataset directory, failing with the offending path on any problem.

    verify (the default, for every training and evaluation stage): recompute every shard's
    sha256 against the manifest and read its parquet footer, so a bit-flipped, truncated or
    swapped shard is refused, naming it, and so is one whose columns or types are not `schema`'s
    (the schema the dataset's writer declares). Cost: one read of the shard bytes (see
    benchmarks/shard_verification.py).
    """
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise TpreproError(f"{manifest_path}: missing dataset manifest (was the data stage run?)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        shards = manifest["shards"]
        int(manifest["rows"])
        if not all({"file", "rows", "sha256"} <= entry.keys() for entry in shards):
            raise KeyError("a shard entry lacks file, rows or sha256")
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TpreproError(f"{manifest_path}: unreadable manifest ({exc})") from exc
    dataset = Dataset(directory, manifest)
    hashes = []
    for entry, path in zip(shards, dataset.files):
        if not path.is_file():
            raise TpreproError(f"{path}: shard listed in {manifest_path} is missing")
        if not verify:
            continue
        try:
            digest = sha256_file(path)
        except OSError as exc:
            raise TpreproError(f"{path}: cannot read shard ({exc.strerror or exc})") from exc
        if digest != entry["sha256"]:
            raise TpreproError(f"{path}: shard is corrupt or was replaced (its sha256 {digest[:12]}... differs "
                               f"from {entry['sha256'][:12]}... in {manifest_path})")
        rows = parquet_rows(path)
        if rows != entry["rows"]:
            raise TpreproError(f"{path}: shard has {rows} rows, {manifest_path} says {entry['rows']}")
        check_shard_schema(path, schema)
        hashes.append(digest)
    if dataset.rows == 0 and not allow_empty:
        raise TpreproError(f"{directory}: dataset is empty (0 rows)")
    return Dataset(directory, manifest, tuple(hashes)) if verify else dataset


def dataset_index(directories: Mapping[str, Path]) -> dict:
    """{name: rows, shard count and manifest SHA-256} of each dataset directory: a small file that
    stands for the datasets as a stage's input. Its content changes with any dataset's manifest, and
    every reader checks the shards against that manifest (open_dataset)."""
    index = {}
    for name, directory in directories.items():
        dataset = open_dataset(directory, verify=False)
        index[name] = {"rows": dataset.rows, "shards": len(dataset.files),
                       "manifest_sha256": sha256_file(Path(directory) / MANIFEST)}
    return index


def read_columns(path: Path, columns: Sequence[str]) -> pa.Table:
    """Read `columns` of one shard, naming the file if it is not valid parquet."""
    try:
        return pq.read_table(path, columns=list(columns))
    except (pa.ArrowException, OSError) as exc:
        raise TpreproError(f"{path}: not a readable parquet shard ({exc})") from exc


def iter_rows(dataset: Dataset, columns: Sequence[str] = ("question", "answer")) -> Iterator[dict]:
    """Stream rows shard by shard (one shard in memory at a time)."""
    for path in dataset.files:
        yield from read_columns(path, columns).to_pylist()
