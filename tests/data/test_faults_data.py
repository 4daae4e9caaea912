"""Data faults done for real (issue 10): bit-flipped and swapped shards are refused, naming the shard."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from helpers import SHARED_DATA, arithmetic_rows, load_default_params, write_dataset, write_params
from tprepro.experiments.n2f.algolisp.release import load_jsonl
from tprepro.cli import main
from tprepro.experiments.mathematics.modules import TRAIN_SPLITS
from tprepro.data.shards import open_dataset, shard_name
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.release import load_release as load_mathqa


def training_data(root, modules):
    """Real parquet datasets for every (train split, module), 2 shards each."""
    for s, split in enumerate(TRAIN_SPLITS):
        for m, module in enumerate(modules):
            write_dataset(root / split / module, arithmetic_rows(80, seed=10 * s + m, module=module, split=split),
                          rows_per_shard=40)
    return [root / split for split in TRAIN_SPLITS]


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_a_flipped_byte_in_a_shard_is_refused_naming_it(tmp_path, where):
    directory = write_dataset(tmp_path / "d", arithmetic_rows(100, seed=1), rows_per_shard=50)
    shard = directory / shard_name(1)
    flip_byte(shard, int(shard.stat().st_size * where))
    with pytest.raises(TpreproError, match="shard is corrupt or was replaced") as exc:
        open_dataset(directory)
    assert str(shard) in str(exc.value)


def test_a_truncated_shard_is_refused_naming_it(tmp_path):
    directory = write_dataset(tmp_path / "d", arithmetic_rows(100, seed=1), rows_per_shard=50)
    shard = directory / shard_name(0)
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(TpreproError, match=str(shard)):
        open_dataset(directory)


def test_a_shard_swapped_for_another_modules_is_refused_naming_it(tmp_path):
    mine = write_dataset(tmp_path / "add", arithmetic_rows(100, seed=1), rows_per_shard=50)
    other = write_dataset(tmp_path / "place", arithmetic_rows(100, seed=2, module="numbers__place_value"),
                          rows_per_shard=50)
    shutil.copyfile(other / shard_name(0), mine / shard_name(0))  # same row count: the manifest's rows agree
    with pytest.raises(TpreproError, match="shard is corrupt or was replaced") as exc:
        open_dataset(mine)
    assert str(mine / shard_name(0)) in str(exc.value)


def test_the_fingerprint_comes_from_the_bytes_not_the_manifest(tmp_path):
    mine = write_dataset(tmp_path / "add", arithmetic_rows(100, seed=1), rows_per_shard=50)
    other = write_dataset(tmp_path / "place", arithmetic_rows(100, seed=2), rows_per_shard=50)
    before = open_dataset(mine).fingerprint()
    shutil.copyfile(other / shard_name(0), mine / shard_name(0))
    # Even opened unverified, the swapped data no longer carries the old data's fingerprint.
    assert open_dataset(mine, verify=False).fingerprint() != before
    shutil.copyfile(other / shard_name(1), mine / shard_name(1))
    shutil.copyfile(other / "manifest.json", mine / "manifest.json")
    assert open_dataset(mine).fingerprint() == open_dataset(other).fingerprint()


def no_checkpoint(checkpoints) -> bool:
    """Nothing but the trainer's lock file (train/folder_lock.py) in the checkpoint (or model) folder, if it exists."""
    return not checkpoints.exists() or {p.name for p in checkpoints.iterdir()} <= {"trainer.lock"}


def vocab_for_training(tmp_path):
    """The default params' training data and its vocabulary, made by the real `tprepro vocab`:
    (params path, modules, training folders per split, vocabulary path)."""
    params = load_default_params()
    modules = params["grid"]["modules"]
    train_dirs = training_data(tmp_path / "data", modules)
    path = write_params(tmp_path / "params.yaml", params)
    vocab = tmp_path / "vocab.json"
    assert main(["vocab", "--params", str(path), "--train", *map(str, train_dirs), "--out", str(vocab)]) == 0
    return path, modules, train_dirs, vocab


def test_training_refuses_a_swapped_shard_before_resuming_anything(tmp_path, capsys):
    """The real `tprepro vocab` and `tprepro train` stages: the swapped shard is named, no checkpoint is touched."""
    path, modules, train_dirs, vocab = vocab_for_training(tmp_path)
    victim = train_dirs[1] / modules[0] / shard_name(1)
    shutil.copyfile(train_dirs[1] / modules[1] / shard_name(1), victim)
    capsys.readouterr()
    checkpoints = tmp_path / "checkpoints"
    status = main(["train", "--params", str(path), "--model", "transformer", "--seed", "1",
                   "--train", *map(str, train_dirs), "--vocab", str(vocab), "--out", str(tmp_path / "model"),
                   "--checkpoints", str(checkpoints), "--heldout", str(train_dirs[0])])
    assert status == 2
    err = capsys.readouterr().err
    assert f"{victim}: shard is corrupt or was replaced" in err
    assert no_checkpoint(checkpoints) and no_checkpoint(tmp_path / "model")  # the model folder: its lock at most
    # The vocab stage, re-run on the same data, refuses it too.
    assert main(["vocab", "--params", str(path), "--train", *map(str, train_dirs), "--out", str(vocab)]) == 2
    assert str(victim) in capsys.readouterr().err



def rewrite_shard_with_digests(directory, index, change):
    """Shard `index` of `directory` rewritten as valid parquet holding `change(table)`, and the manifest's
    sha256 and rows updated to match (what a careless or malicious edit leaves)."""
    import pyarrow.parquet as pq

    from tprepro.io import sha256_file

    path = directory / shard_name(index)
    pq.write_table(change(pq.read_table(path)), path)
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["shards"][index].update(sha256=sha256_file(path), rows=pq.ParquetFile(path).metadata.num_rows)
    manifest_path.write_text(json.dumps(manifest))
    return path


def renamed_answer(table):
    return table.rename_columns(["solution" if name == "answer" else name for name in table.column_names])


def numeric_answer(table):
    import pyarrow as pa

    return table.set_column(table.column_names.index("answer"), "answer", pa.array(range(table.num_rows)))


def with_a_null(table, column: str):
    """`table` with row 4 of `column` null (a nullable column, as pandas or another writer stores it)."""
    import pyarrow as pa

    values = table.column(column).to_pylist()
    values[3] = None
    return table.set_column(table.column_names.index(column), pa.field(column, pa.string(), nullable=True),
                            pa.array(values, pa.string()))


def extra_column(table):
    import pyarrow as pa

    return table.append_column("note", pa.array(["x"] * table.num_rows))


@pytest.mark.parametrize("change, message", [
    (renamed_answer, "column 'answer' is missing"),
    (numeric_answer, "column 'answer' is int64, the dataset declares string"),
    (extra_column, "column 'note' is not one the dataset declares"),
    (lambda table: with_a_null(table, "question"), "column 'question' holds a null value (row 4 of "),
    (lambda table: with_a_null(table, "answer"), "column 'answer' holds a null value (row 4 of "),
], ids=["renamed", "retyped", "extra", "null-question", "null-answer"])  # nulls: issue 46, gap 8 (a raw TypeError)
def test_training_refuses_a_shard_with_other_columns_naming_file_and_column(tmp_path, capsys, change, message):
    """A valid parquet shard with other columns or types, its manifest digests updated to match: the real
    `tprepro train` exits 2 naming the shard and the column (was a KeyError or TypeError, exit 1)."""
    path, modules, train_dirs, vocab = vocab_for_training(tmp_path)
    victim = rewrite_shard_with_digests(train_dirs[2] / modules[0], 1, change)
    capsys.readouterr()
    status = main(["train", "--params", str(path), "--model", "transformer", "--seed", "1",
                   "--train", *map(str, train_dirs), "--vocab", str(vocab), "--out", str(tmp_path / "model"),
                   "--checkpoints", str(tmp_path / "checkpoints"), "--heldout", str(train_dirs[0])])
    assert status == 2
    assert f"{victim}: {message}" in capsys.readouterr().err
    assert no_checkpoint(tmp_path / "checkpoints")



# ---- malformed AlgoLisp and MathQA records: the loader's file-and-line error, never a bare exception ----

ALGOLISP_RECORD = SHARED_DATA / "algolisp" / "example_record.jsonl"  # the real record, where present


def algolisp_file(tmp_path, **changes):
    """The real example record (or a hand-made one) with `changes`, as line 2 of a JSONL file."""
    record = {"text": ["given", "a"], "short_tree": ["+", "a", "1"], "args": {"a": "int"}, "return_type": "int",
              "tests": [{"input": {"a": 1}, "output": 2}]}
    if ALGOLISP_RECORD.is_file():
        record = json.loads(ALGOLISP_RECORD.read_text(encoding="utf-8").splitlines()[0])
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps({**record, **changes}) + "\n", encoding="utf-8")
    return path


def nested(depth: int, leaf="a"):
    tree = leaf
    for _ in range(depth):
        tree = ["head", tree]
    return tree


@pytest.mark.parametrize("changes, message", [
    ({"short_tree": {"head": "+"}}, "key 'short_tree'"),
    ({"short_tree": 3}, "key 'short_tree'"),
    ({"short_tree": ["+", "a", 7]}, "key 'short_tree'"),
    ({"short_tree": ["+", {"a": 1}]}, "key 'short_tree'"),
    ({"short_tree": nested(500)}, "key 'short_tree': program nests calls more than 200 deep"),
    ({"tests": [{"input": 1, "output": 2}]}, "key 'tests'"),
    ({"tests": [[1, 2]]}, "key 'tests'"),
])
def test_malformed_algolisp_records_give_the_file_and_line(tmp_path, changes, message):
    path = algolisp_file(tmp_path, **changes)
    with pytest.raises(TpreproError, match=re.escape(f"{path}:2: {message}")):
        load_jsonl(path, "train")


def test_a_3000_deep_algolisp_tree_gives_the_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    text = json.dumps({"text": ["a"], "short_tree": "X", "args": {}, "return_type": "int", "tests": []})
    path.write_text("\n" + text.replace('"X"', "[\"f\", " * 3000 + '"a"' + "]" * 3000) + "\n", encoding="utf-8")
    # JSON too deep for the recursion limit, or (after a caller raised the limit) a tree too deep.
    with pytest.raises(TpreproError, match=re.escape(f"{path}:2: ") + "(JSON nested too deeply|key 'short_tree')"):
        load_jsonl(path, "train")


def test_a_3000_deep_mathqa_file_is_named(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text("[" * 3000 + "]" * 3000, encoding="utf-8")
    with pytest.raises(TpreproError, match=re.escape(f"{path}: ") + "(cannot read the MathQA release file|record 0)"):
        load_mathqa(path, "dev")


MATHQA_RECORD = {"Problem": "a train runs 10 km in 2 hours", "Rationale": "10 / 2", "options": "a ) 5 , b ) 4",
                 "correct": "a", "annotated_formula": "divide(n0, n1)", "linear_formula": "divide(n0,n1)|",
                 "category": "physics"}


@pytest.mark.parametrize("changes, message", [
    ({"linear_formula": 3}, "key 'linear_formula' is not a string"),
    ({"linear_formula": "divide(n0,#7)|"}, "key 'linear_formula'"),
    ({"linear_formula": "divide(n0,n1"}, "key 'linear_formula'"),
    ({"options": ["a", "b"]}, "key 'options' is not a string"),
    ({"correct": None}, "key 'correct' is not a string"),
])
def test_malformed_mathqa_records_name_the_file_and_record(tmp_path, changes, message):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([MATHQA_RECORD, {**MATHQA_RECORD, **changes}]), encoding="utf-8")
    with pytest.raises(TpreproError, match=re.escape(f"{path}: record 1: {message}")):
        load_mathqa(path, "dev")
