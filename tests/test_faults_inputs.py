"""Every file a stage reads whole is verified against the digest recorded when it was written (issue 25):
a one-byte change in a vocabulary or a subword model is refused, naming the file, instead of silently
changing the tokenization."""

import pytest

from tprepro.data.vocab import Vocab
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.tuple_vocab import TupleVocab, build_tuple_vocab
from tprepro.experiments.summarization.tokenizer import SubwordCodec, train_subwords
from tprepro.io import digest_path

TEXT = ["The quick brown fox jumps over the lazy dog.", "Summaries are short; documents are long.",
        "Tensor product representations bind fillers to roles."] * 20


def flip_one_byte(path, offset=None) -> None:
    body = bytearray(path.read_bytes())
    offset = len(body) // 2 if offset is None else offset
    body[offset] ^= 0x01
    path.write_bytes(bytes(body))


def character_vocab(path):
    Vocab(("<pad>", "<s>", "</s>", "<unk>", "1", "2", "+", "?")).save(path)
    return lambda: Vocab.load(path)


def tuple_vocab(path):
    build_tuple_vocab([("add two numbers", "add n0 n1"), ("subtract them", "subtract n0 n1")], arity=2).save(path)
    return lambda: TupleVocab.load(path)


def subword_model(path):
    train_subwords(TEXT, 40, path, seed=1)
    return lambda: SubwordCodec.load(path, 32, 16)


@pytest.mark.parametrize("make", [character_vocab, tuple_vocab, subword_model],
                         ids=["vocab.json", "n2f vocab.json", "spm.model"])
def test_a_changed_byte_is_refused_naming_the_file(tmp_path, make):
    path = tmp_path / "input"
    load = make(path)
    load()  # as written: reads
    assert digest_path(path).read_text().endswith("  input\n")  # sha256sum's format
    flip_one_byte(path)
    with pytest.raises(TpreproError, match=rf"{path}: its content changed after it was written"):
        load()


def test_a_file_written_before_digests_is_read_as_it_is(tmp_path):
    path = tmp_path / "vocab.json"
    load = character_vocab(path)
    digest_path(path).unlink()
    assert len(load()) == 8
