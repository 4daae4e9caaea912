"""The finished shards of a dataset job that did not finish, kept beside its output so that a rerun of the
same job makes only the rest.

A job of many shards (a paper-size Mathematics data job: hours of CPU) would otherwise start again from
zero after a kill, a time limit or one failing shard. Each shard is saved here as it completes, with a
record of its bytes; the dataset is assembled from this folder once every shard is in it, and the folder
is removed. Snakemake and DVC delete a failed job's outputs, not this hidden sibling. A folder written
under other settings (the job's `identity`) is discarded, and so is a shard whose bytes do not match its
record (a kill between the two writes, a truncated file).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from tprepro.data.shards import SCHEMA, shard_name, write_shard
from tprepro.io import atomic_write_text, sha256_file, write_error

JOB_FILE = "job.json"


def resume_folder(target: Path) -> Path:
    """Where the finished shards of an unfinished job writing `target` are kept."""
    return target.with_name(f".{target.name}.resume")


class FinishedShards:
    """The shards of one job (`identity`: everything its shards' bytes depend on) finished so far."""

    def __init__(self, target: Path, identity: dict, schema: pa.Schema = SCHEMA):
        self.target = Path(target)
        self.path = resume_folder(self.target)
        self.identity = identity
        self.schema = schema
        self.notes: dict[int, dict] = {}  # shard index -> what was recorded with it (e.g. dropped draws)

    def open(self) -> dict[int, dict]:
        """Load the shards an earlier attempt of this job finished (index -> its notes); start a fresh folder
        where there is none, or where it was written under other settings."""
        try:
            if self.path.is_dir() and self._recorded_identity() != self.identity:
                shutil.rmtree(self.path)
                print(f"discarded {self.path}: shards of another job's settings", file=sys.stderr, flush=True)
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(self.target, exc) from exc
        atomic_write_text(self.path / JOB_FILE, json.dumps(self.identity, sort_keys=True) + "\n")
        for record in sorted(p for p in self.path.glob("*.json") if p.name != JOB_FILE):
            index, notes = self._checked(record)
            if index is None:
                record.unlink(missing_ok=True)
            else:
                self.notes[index] = notes
        return dict(self.notes)

    def save(self, index: int, rows: list[dict], **notes) -> None:
        """Keep shard `index` (its rows) with its notes; it counts as finished once its record is written."""
        path = self.path / shard_name(index)
        write_shard(rows, path, self.schema)
        record = {"index": index, "sha256": sha256_file(path), "notes": notes}
        atomic_write_text(path.with_suffix(".json"), json.dumps(record, sort_keys=True) + "\n")
        self.notes[index] = notes

    def rows(self, count: int) -> Iterator[list[dict]]:
        """Shards 0 .. count-1, in order, as rows (for tprepro.data.shards.write_dataset)."""
        for index in range(count):
            yield pq.read_table(self.path / shard_name(index), schema=self.schema).to_pylist()

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def _recorded_identity(self) -> dict | None:
        try:
            return json.loads((self.path / JOB_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _checked(self, record: Path) -> tuple[int | None, dict]:
        """(index, notes) of a shard whose bytes match its record, else (None, {})."""
        try:
            entry = json.loads(record.read_text(encoding="utf-8"))
            shard = self.path / shard_name(int(entry["index"]))
            if shard.with_suffix(".json") == record and shard.is_file() and sha256_file(shard) == entry["sha256"]:
                return int(entry["index"]), dict(entry["notes"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None, {}
