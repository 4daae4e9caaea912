"""The parquet shard format: writing, manifests and the checks in open_dataset."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tprepro.data.shards import (
    MANIFEST,
    iter_rows,
    open_dataset,
    sha256_file,
    shard_name,
    write_manifest,
    write_shard,
)
from tprepro.errors import TpreproError


def _rows(n: int, start: int = 0) -> list[dict]:
    return [
        {"question": f"What is {i} + 1?", "answer": str(i + 1), "module": "arithmetic__add_or_sub",
         "split": "interpolate", "difficulty": "interpolate"}
        for i in range(start, start + n)
    ]  # fmt: skip


def _make_dataset(directory, sizes=(3, 2)):
    paths, start = [], 0
    for index, size in enumerate(sizes):
        paths.append(directory / shard_name(index))
        write_shard(_rows(size, start), paths[-1])
        start += size
    write_manifest(directory, paths, split="interpolate", module="arithmetic__add_or_sub")
    return paths


def test_round_trip(tmp_path):
    _make_dataset(tmp_path)
    dataset = open_dataset(tmp_path, verify=True)
    assert dataset.rows == 5
    assert [p.name for p in dataset.files] == ["part-00000.parquet", "part-00001.parquet"]
    assert dataset.manifest["module"] == "arithmetic__add_or_sub"
    assert [r["answer"] for r in iter_rows(dataset)] == ["1", "2", "3", "4", "5"]


def test_equal_rows_give_equal_bytes_and_fingerprint(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _make_dataset(a)
    _make_dataset(b)
    for name in ("part-00000.parquet", "part-00001.parquet", MANIFEST):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert open_dataset(a).fingerprint() == open_dataset(b).fingerprint()


def test_missing_manifest(tmp_path):
    with pytest.raises(TpreproError, match="missing dataset manifest") as exc:
        open_dataset(tmp_path)
    assert str(tmp_path / MANIFEST) in str(exc.value)


def test_unreadable_manifest(tmp_path):
    (tmp_path / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(TpreproError, match="unreadable manifest"):
        open_dataset(tmp_path)


def test_missing_shard(tmp_path):
    paths = _make_dataset(tmp_path)
    paths[1].unlink()
    with pytest.raises(TpreproError, match="is missing") as exc:
        open_dataset(tmp_path)
    assert str(paths[1]) in str(exc.value)


def test_corrupt_shard_detected_with_verify(tmp_path):
    paths = _make_dataset(tmp_path)
    data = bytearray(paths[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    paths[0].write_bytes(bytes(data))
    open_dataset(tmp_path, verify=False)  # without verify only existence is checked
    with pytest.raises(TpreproError, match="corrupt") as exc:
        open_dataset(tmp_path)
    assert str(paths[0]) in str(exc.value)


def test_empty_dataset(tmp_path):
    write_manifest(tmp_path, [], split="interpolate", module="arithmetic__add_or_sub")
    with pytest.raises(TpreproError, match="empty"):
        open_dataset(tmp_path)
    assert open_dataset(tmp_path, allow_empty=True).rows == 0


def test_non_parquet_shard(tmp_path):
    paths = _make_dataset(tmp_path, sizes=(2,))
    paths[0].write_text("question,answer\n1+1,2\n", encoding="utf-8")
    dataset = open_dataset(tmp_path, verify=False)  # without verify the content is not read
    with pytest.raises(TpreproError, match="not a readable parquet shard") as exc:
        list(iter_rows(dataset))
    assert str(paths[0]) in str(exc.value)


def test_non_parquet_file_in_manifest(tmp_path):
    path = tmp_path / shard_name(0)
    path.write_text("not parquet\n", encoding="utf-8")
    with pytest.raises(TpreproError, match="not a readable parquet shard") as exc:
        write_manifest(tmp_path, [path])
    assert str(path) in str(exc.value)
    # A manifest whose hash matches a non-parquet file is caught by verify.
    (tmp_path / MANIFEST).write_text(json.dumps({"rows": 1, "shards": [
        {"file": path.name, "rows": 1, "sha256": sha256_file(path)}]}), encoding="utf-8")  # fmt: skip
    with pytest.raises(TpreproError, match="not a readable parquet shard"):
        open_dataset(tmp_path, verify=True)


def test_row_count_mismatch(tmp_path):
    _make_dataset(tmp_path, sizes=(2,))
    manifest = json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))
    manifest["shards"][0]["rows"] = 3
    (tmp_path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(TpreproError, match="has 2 rows"):
        open_dataset(tmp_path, verify=True)


def test_manifest_missing_keys(tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"rows": 1, "shards": [{"file": "x"}]}), encoding="utf-8")
    with pytest.raises(TpreproError, match="unreadable manifest"):
        open_dataset(tmp_path)


def test_the_index_of_datasets_follows_their_manifests(tmp_path):
    """dataset_index: rows, shard count and manifest SHA-256 per dataset; a dataset written anew
    with other rows gets another entry, the same rows the same one."""
    from tprepro.data.shards import dataset_index

    _make_dataset(tmp_path / "a")
    _make_dataset(tmp_path / "b", sizes=(4,))
    index = dataset_index({"a": tmp_path / "a", "b": tmp_path / "b"})
    assert {name: (entry["rows"], entry["shards"]) for name, entry in index.items()} == {"a": (5, 2), "b": (4, 1)}
    assert index["a"]["manifest_sha256"] == sha256_file(tmp_path / "a" / MANIFEST)
    for path in (tmp_path / "b").iterdir():
        path.unlink()
    _make_dataset(tmp_path / "b", sizes=(4,))
    assert dataset_index({"b": tmp_path / "b"}) == {"b": index["b"]}
    for path in (tmp_path / "b").iterdir():
        path.unlink()
    _make_dataset(tmp_path / "b", sizes=(3,))
    assert dataset_index({"b": tmp_path / "b"})["b"]["manifest_sha256"] != index["b"]["manifest_sha256"]


def test_the_index_of_a_missing_dataset_names_its_manifest(tmp_path):
    from tprepro.data.shards import dataset_index

    with pytest.raises(TpreproError, match=rf"{tmp_path / 'gone' / MANIFEST}: missing dataset manifest"):
        dataset_index({"gone": tmp_path / "gone"})


READER_PEAK = """
import sys
from pathlib import Path
import pyarrow as pa
from tprepro.data.batching import _DatasetReader
shard = Path(sys.argv[1])
reader = _DatasetReader(0, [shard], int(sys.argv[2]), seed=1, epoch=0, read_rows=1024)
for _ in range(3000):  # across the first row groups
    reader.take()
print(pa.default_memory_pool().max_memory())
"""


def test_a_reader_holds_a_row_group_not_a_shard(tmp_path):
    """The training stream's reader decodes one row group at a time: a shard four times as long costs it
    little more memory (with the whole shard one row group, its peak grew with the shard)."""
    import subprocess
    import sys

    from tprepro.data.shards import ROW_GROUP_ROWS, write_shard

    peaks = {}
    for rows in (20_000, 80_000):
        shard = tmp_path / f"{rows}.parquet"
        write_shard([{"question": f"What is {i} plus {i * 7}? " * 4, "answer": str(i * 8), "module": "m", "split": "s",
                      "difficulty": "d"} for i in range(rows)], shard)
        with pq.ParquetFile(shard) as handle:
            assert handle.metadata.num_row_groups == -(-rows // ROW_GROUP_ROWS)
        result = subprocess.run([sys.executable, "-c", READER_PEAK, str(shard), str(rows)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        peaks[rows] = int(result.stdout)
    # 60,000 more rows add only their row groups' footer entries (about 10 kB each), not their text (~7 MB);
    # written as one row group, these shards peaked at 3.4 and 6.0 MB
    assert peaks[80_000] - peaks[20_000] < 2**20, peaks
    assert peaks[80_000] < 2 * 2**20, peaks
