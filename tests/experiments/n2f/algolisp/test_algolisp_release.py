"""AlgoLisp loader, parquet round trip, and the real record's gold program under the interpreter."""

import json

import pytest

from tprepro.experiments.n2f.algolisp import release
from tprepro.experiments.n2f.algolisp.interpreter import run_tests
from tprepro.experiments.n2f.algolisp.program import text_to_tree
from tprepro.errors import TpreproError

from helpers import release_file

RECORD = "algolisp/example_record.jsonl"  # one real record, under $TPREPRO_RELEASE_DATA


def test_load_real_record_and_gold_passes_its_tests():
    rows = release.load_jsonl(release_file(RECORD), "test")
    assert len(rows) == 1
    row = rows[0]
    record = json.loads(release_file(RECORD).read_text().splitlines()[0])
    assert row["id"] == "test-0" and row["split"] == "test"
    assert row["question"] == " ".join(record["text"])
    assert row["answer"].startswith("digits arg1 <none> <none> | len #0 <none> <none> | == #1 1 <none>")
    assert text_to_tree(row["answer"]) == record["short_tree"]
    assert json.loads(row["tests"]) == record["tests"]
    results = run_tests(record["short_tree"], record["tests"], record["args"])
    assert results == [True] * 10


def test_parquet_round_trip(tmp_path):
    rows = release.load_jsonl(release_file(RECORD), "test")
    path = tmp_path / "algolisp.parquet"
    release.write_parquet(rows, path)
    back = release.read_parquet(path)
    assert back == rows
    record = release.row_to_record(back[0])
    original = json.loads(release_file(RECORD).read_text().splitlines()[0])
    assert {k: record[k] for k in original} == original


def test_errors_name_file_and_line(tmp_path):
    good = release_file(RECORD).read_text().splitlines()[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n{not json\n")
    with pytest.raises(TpreproError, match=r"bad\.jsonl:2"):
        release.load_jsonl(path, "dev")
    record = json.loads(good)
    del record["tests"]
    path.write_text(good + "\n\n" + json.dumps(record) + "\n")
    with pytest.raises(TpreproError, match=r"bad\.jsonl:3: missing key 'tests'"):
        release.load_jsonl(path, "dev")


def test_write_jsonl_round_trips(tmp_path):
    record = json.loads(release_file(RECORD).read_text().splitlines()[0])
    path = tmp_path / "out.jsonl"
    release.write_jsonl([record, record], path)
    rows = release.load_jsonl(path, "train")
    assert [r["id"] for r in rows] == ["train-0", "train-1"]
    assert json.loads(rows[1]["short_tree"]) == record["short_tree"]
