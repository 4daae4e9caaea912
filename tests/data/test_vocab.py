"""The character vocabulary file."""

import pytest

from tprepro.data.shards import open_dataset
from tprepro.data.vocab import SPECIALS, Vocab, build_vocab
from tprepro.errors import TpreproError

from helpers import arithmetic_rows, write_dataset


def test_vocab_round_trip(tmp_path):
    rows = arithmetic_rows(100, seed=1)
    vocab = build_vocab([open_dataset(write_dataset(tmp_path / "d", rows))])
    assert vocab.symbols[: len(SPECIALS)] == SPECIALS
    assert set(vocab.symbols[len(SPECIALS):]) == set("".join(r["question"] + r["answer"] for r in rows))
    vocab.save(tmp_path / "vocab.json")
    assert Vocab.load(tmp_path / "vocab.json") == vocab
    for r in rows:
        assert vocab.decode(vocab.encode(r["answer"]) + [vocab.eos_id]) == r["answer"]


def test_bad_vocab_files_are_named(tmp_path):
    with pytest.raises(TpreproError, match="vocab.json: vocabulary file not found"):
        Vocab.load(tmp_path / "vocab.json")
    (tmp_path / "vocab.json").write_text("{not json")
    with pytest.raises(TpreproError, match="vocab.json: not a tprepro vocabulary"):
        Vocab.load(tmp_path / "vocab.json")
