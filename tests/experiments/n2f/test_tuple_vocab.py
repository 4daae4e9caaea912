"""The N2F codec: tuple programs <-> id tensors, vocabularies, and the trainer's batch stream over them."""

import pytest
import torch

from helpers import write_dataset
from tprepro.data.batching import BatchStream, count_targets
from tprepro.data.shards import open_dataset
from tprepro.experiments.n2f.tuple_vocab import TupleVocab, build_tuple_vocab
from tprepro.experiments.n2f.tuples import (ARG_NONE, ARG_PAD, NO_ARG, REL_BOS, REL_EOS, REL_PAD, format_program, pad_tuple,
                                 parse_program, strip_tuple)
from tprepro.errors import TpreproError

ROWS = [
    ("a train goes 60 km in 2 hours", "divide n0 n1"),
    ("what is 5 % of 40 ?", "divide n0 const_100 | multiply #0 n1"),
    ("the sqrt of 16", f"sqrt n0 {NO_ARG}"),
]


def test_program_strings_round_trip_and_reject_bad_tokens():
    program = [pad_tuple("divide", ["n0", "const_100"], 2), pad_tuple("sqrt", ["#0"], 2)]
    assert format_program(program) == "divide n0 const_100 | sqrt #0 <none>"
    assert parse_program(format_program(program), arity=2) == program
    assert strip_tuple(program[1]) == ("sqrt", ("#0",))
    with pytest.raises(TpreproError, match="space"):
        format_program([("add", "a b", NO_ARG)])
    with pytest.raises(TpreproError, match="tuple 1"):
        parse_program("add n0 n1 | sqrt n0", arity=2)
    with pytest.raises(TpreproError, match="arity is 2"):
        pad_tuple("volume", ["a", "b", "c"], 2)


def test_collate_builds_start_end_and_padding_tuples():
    vocab = build_tuple_vocab(ROWS, arity=2)
    batch = vocab.collate(ROWS[:2])
    assert batch.tgt_in.shape == batch.tgt_out.shape == (2, 3, 3)  # longest program (2) + 1
    assert batch.tgt_in[:, 0].tolist() == [[REL_BOS, ARG_NONE, ARG_NONE]] * 2
    first = vocab.decode_program(batch.tgt_out[0])
    assert first == [("divide", "n0", "n1")]
    assert batch.tgt_out[0, 1].tolist() == [REL_EOS, ARG_NONE, ARG_NONE]
    assert batch.tgt_out[0, 2].tolist() == [REL_PAD, ARG_PAD, ARG_PAD]
    assert vocab.decode_program(batch.tgt_out[1]) == parse_program(ROWS[1][1], 2)
    assert batch.n_tokens == count_targets(batch.tgt_out, REL_PAD) == 2 + 3
    assert batch.src.shape == (2, 8)  # words, no start/end symbols
    assert (batch.src[1] != vocab.pad_id).sum() == 7


def test_unknown_symbols_map_to_unk_and_the_vocabulary_round_trips(tmp_path):
    vocab = build_tuple_vocab(ROWS, arity=2)
    assert vocab.encode_words("a train flies") == [vocab.encode_words("a")[0], vocab.encode_words("train")[0],
                                                   vocab.word_unk]
    assert vocab.encode_tuple(("power", "n7", "n0")) == [vocab.relation_unk, vocab.argument_unk,
                                                         vocab.encode_tuple(("add", "n0", "n0"))[1]]
    vocab.save(tmp_path / "vocab.json")
    assert TupleVocab.load(tmp_path / "vocab.json") == vocab
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(TpreproError, match="bad.json"):
        TupleVocab.load(tmp_path / "bad.json")
    assert vocab.model_sizes() == {"vocab_size": len(vocab.words), "pad_id": 0,
                                   "n_relations": len(vocab.relations), "n_arguments": len(vocab.arguments)}


def test_batch_stream_streams_tuple_batches_and_resumes_exactly(tmp_path):
    rows = [{"question": f"q {i} " * (1 + i % 5), "answer": ROWS[i % 3][1], "module": "m", "split": "train",
             "difficulty": ""} for i in range(60)]
    dataset = open_dataset(write_dataset(tmp_path / "d", rows, rows_per_shard=20))
    vocab = build_tuple_vocab(((r["question"], r["answer"]) for r in rows), arity=2)
    stream = BatchStream(dataset.files, vocab, batch_size=4, bucket_width=16, seed=3, read_rows=16)
    batches = iter(stream)
    next(batches)
    state = stream.state_dict()
    expected = [next(batches) for _ in range(5)]
    resumed = iter(BatchStream(dataset.files, vocab, 4, 16, seed=3, read_rows=16, state=state))
    for want in expected:
        got = next(resumed)
        assert got.tgt_out.dim() == 3
        assert all(torch.equal(a, b) for a, b in ((got.src, want.src), (got.tgt_in, want.tgt_in),
                                                  (got.tgt_out, want.tgt_out)))
