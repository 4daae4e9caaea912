"""Loading the released mathematics_dataset-v1.0 text files."""

from __future__ import annotations

import re

import pytest

from tprepro.experiments.mathematics.release import load_release
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.experiments.mathematics.data_stage import run_data_stage
from tprepro.errors import TpreproError

PAIRS = [
    ("Let g = -0.05 + 0.05. What is g rounded to 2 decimal places?", "0"),
    ("What is 0.3 - -2740.8?", "2741.1"),
    ("Work out 0.1 + -1.46.", "-1.36"),
    ("Sum 2 and -30.62.", "-28.62"),
    ("What is -0.5 take away 3?", "-3.5"),
]
MODULE = "arithmetic__add_or_sub"


def _write_release(root, split="train-easy", module=MODULE, lines=None):
    if lines is None:
        lines = [line for pair in PAIRS for line in pair]
    path = root / split / f"{module}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _config(root, rows_per_shard=2):
    return {"source": "release", "release_root": str(root), "seed": 1,
            "train_per_module": 10, "test_per_module": 10, "rows_per_shard": rows_per_shard}  # fmt: skip


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_load_release_rows_and_shards(tmp_path, capsys):
    root = tmp_path / "mathematics_dataset-v1.0"
    _write_release(root)
    out = tmp_path / "out"
    run_data_stage("train-easy", MODULE, out, _config(root, rows_per_shard=2))
    log = capsys.readouterr().out  # the stage's log line: when, what, where, how fast
    assert re.fullmatch(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC train-easy/{MODULE}: 5 problems in 3 shards -> "
                        rf"{re.escape(str(out))} \(imported from the release, \d+\.\d s, \d+ problems/s\)\n", log), log
    dataset = open_dataset(out, verify=True)
    assert [s["rows"] for s in dataset.manifest["shards"]] == [2, 2, 1]
    assert dataset.manifest["source"] == "release"
    assert dataset.manifest["release_file"] == f"train-easy/{MODULE}.txt"
    rows = list(iter_rows(dataset, columns=("question", "answer", "module", "split", "difficulty")))
    assert [(r["question"], r["answer"]) for r in rows] == PAIRS
    assert {(r["module"], r["split"], r["difficulty"]) for r in rows} == {(MODULE, "train-easy", "easy")}


def test_load_is_deterministic_and_handles_crlf(tmp_path):
    root = tmp_path / "release"
    path = _write_release(root, split="interpolate")
    load_release(root, "interpolate", MODULE, tmp_path / "a", rows_per_shard=3)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    load_release(root, "interpolate", MODULE, tmp_path / "b", rows_per_shard=3)
    a, b = open_dataset(tmp_path / "a"), open_dataset(tmp_path / "b")
    assert a.fingerprint() == b.fingerprint()
    assert list(iter_rows(a)) == list(iter_rows(b))


def test_missing_file(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(TpreproError, match="release file not found") as exc:
        load_release(tmp_path, "train-hard", MODULE, out, rows_per_shard=2)
    assert f"train-hard/{MODULE}.txt" in str(exc.value)
    assert not out.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["What is 1 + 1?", "2", "What is 2 + 2?"], r"has 3 lines, an odd number"),
        (["What is 1 + 1?", "2", "What is 2 + 2?", ""], r":4: empty answer line"),
        (["What is 1 + 1?", "2", "   ", "4"], r":3: empty question line"),
        ([], r"file is empty"),
    ],
)
def test_bad_file_writes_nothing(tmp_path, lines, message):
    root = tmp_path / "release"
    path = _write_release(root, lines=lines)
    out = tmp_path / "out"
    with pytest.raises(TpreproError, match=message) as exc:
        load_release(root, "train-easy", MODULE, out, rows_per_shard=1)
    assert str(path) in str(exc.value)
    assert not out.exists() and _leftovers(tmp_path) == []


def test_invalid_utf8(tmp_path):
    path = _write_release(tmp_path)
    path.write_bytes(b"What is \xff?\n1\n")
    with pytest.raises(TpreproError, match=r":1: not valid UTF-8"):
        load_release(tmp_path, "train-easy", MODULE, tmp_path / "out", rows_per_shard=1)


def test_unknown_module_and_split(tmp_path):
    with pytest.raises(TpreproError, match="unknown module 'arithmetic__nope' for split 'train-easy'"):
        load_release(tmp_path, "train-easy", "arithmetic__nope", tmp_path / "out", rows_per_shard=1)
    with pytest.raises(TpreproError, match="unknown split 'train-extreme'"):
        load_release(tmp_path, "train-extreme", MODULE, tmp_path / "out", rows_per_shard=1)
    # Extrapolation-only modules are not train modules and vice versa.
    with pytest.raises(TpreproError, match="unknown module 'arithmetic__add_or_sub' for split 'extrapolate'"):
        load_release(tmp_path, "extrapolate", MODULE, tmp_path / "out", rows_per_shard=1)
    assert not (tmp_path / "out").exists()


def test_failed_rerun_keeps_existing_output(tmp_path):
    root = tmp_path / "release"
    path = _write_release(root)
    out = tmp_path / "out"
    load_release(root, "train-easy", MODULE, out, rows_per_shard=2)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    path.write_text("What is 1 + 1?\n2\nWhat is 2 + 2?\n", encoding="utf-8")
    with pytest.raises(TpreproError, match="odd number"):
        load_release(root, "train-easy", MODULE, out, rows_per_shard=2)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _leftovers(tmp_path) == []


def test_release_root_required(tmp_path):
    config = _config(tmp_path)
    config["release_root"] = None
    with pytest.raises(TpreproError, match=r"data\.release_root"):
        run_data_stage("train-easy", MODULE, tmp_path / "out", config)
