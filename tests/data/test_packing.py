"""Packed batches: every problem once, intact, within its row; far less padding than padded rows."""

import random

import numpy as np
import pytest

from tprepro.data.batching import BatchStream, collate
from tprepro.data.packing import assign_rows, pack
from tprepro.data.shards import iter_rows

from helpers import generated_mathematics

MODULES = ("algebra__linear_1d", "numbers__place_value", "calculus__differentiate", "comparison__sort")


@pytest.fixture(scope="module")
def generated(tmp_path_factory, generate_python):
    """(datasets, vocabulary) of the real generator's problems of four modules of very different lengths."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return generated_mathematics(tmp_path_factory.mktemp("packing"), monkeypatch, generate_python, MODULES, 96, 4)


@pytest.fixture()
def real(generated):
    """(rows in a random order, vocabulary)."""
    datasets, vocab = generated
    rows = [(r["question"], r["answer"]) for d in datasets for r in iter_rows(d)]
    random.Random(0).shuffle(rows)
    return rows, vocab


def unpacked(values, docs, problem):
    """The values at `problem`'s positions, in row order."""
    return values[docs == problem].tolist()


def test_every_problem_lies_whole_in_one_row_at_positions_from_zero(real):
    rows, vocab = real
    batch_rows = rows[:64]
    padded, packed = collate(batch_rows, vocab), pack(batch_rows, vocab)
    seg = packed.segments
    assert packed.src.shape[0] < 64 and packed.problems == 64 and packed.n_tokens == padded.n_tokens
    assert (packed.src.shape[1], packed.tgt_in.shape[1]) == (padded.src.shape[1], padded.tgt_in.shape[1])
    assert packed.positions < padded.positions
    rounded = pack(batch_rows, vocab, multiple=8)
    assert rounded.src.shape[1] % 8 == 0 and rounded.tgt_in.shape[1] % 8 == 0 and rounded.problems == 64
    for b in range(64):
        src_len = int((padded.src[b] != vocab.pad_id).sum())
        tgt_len = int((padded.tgt_out[b] != vocab.pad_id).sum())
        assert unpacked(packed.src, seg.src_docs, b) == padded.src[b, :src_len].tolist()
        assert unpacked(packed.tgt_in, seg.tgt_docs, b) == padded.tgt_in[b, :tgt_len].tolist()
        assert unpacked(packed.tgt_out, seg.tgt_docs, b) == padded.tgt_out[b, :tgt_len].tolist()
        assert unpacked(seg.src_positions, seg.src_docs, b) == list(range(src_len))
        assert unpacked(seg.tgt_positions, seg.tgt_docs, b) == list(range(tgt_len))
        src_rows, tgt_rows = (seg.src_docs == b).nonzero()[:, 0], (seg.tgt_docs == b).nonzero()[:, 0]
        assert len(set((src_rows.tolist() + tgt_rows.tolist()))) == 1  # source and target share a row
        columns = (seg.src_docs == b).nonzero()[:, 1]
        assert columns.tolist() == list(range(int(columns[0]), int(columns[0]) + src_len))  # contiguous
    assert (packed.src[seg.src_docs < 0] == vocab.pad_id).all() and (packed.tgt_out[seg.tgt_docs < 0] == vocab.pad_id).all()


def padding(batch, vocab) -> float:
    real = batch.n_tokens + int((batch.src != vocab.pad_id).sum())
    return 1 - real / batch.positions


def test_packing_removes_most_of_the_padding_of_random_batches(real):
    rows, vocab = real
    batches = [rows[start:start + 64] for start in range(0, 320, 64)]
    padded = np.mean([padding(collate(b, vocab), vocab) for b in batches])
    packed = np.mean([padding(pack(b, vocab), vocab) for b in batches])
    assert padded > 0.4  # four modules of very different lengths in one random batch
    assert packed < 0.2 and packed < padded / 2.5


def test_best_fit_fills_rows_and_respects_both_widths():
    row, src_offset, tgt_offset, n_rows = assign_rows([6, 4, 4, 2], [1, 1, 1, 1], src_width=8, tgt_width=8)
    assert n_rows == 2 and sorted(zip(row.tolist(), src_offset.tolist())) == [(0, 0), (0, 6), (1, 0), (1, 4)]
    # the sources would share a row of 8; the targets (5 + 5 > 8) do not
    row, _, tgt_offset, n_rows = assign_rows([4, 4], [5, 5], src_width=8, tgt_width=8)
    assert n_rows == 2 and tgt_offset.tolist() == [0, 0]
    with pytest.raises(ValueError, match="problem 1 .* exceeds the row width"):
        assign_rows([4, 9], [1, 1], src_width=8, tgt_width=8)


def test_a_packing_stream_draws_the_batches_of_a_padding_one(generated):
    """`collate` changes only how a batch's rows are laid out: the stream draws the same rows."""
    datasets, vocab = generated
    files = [d.files for d in datasets]
    make = lambda collate_with: iter(BatchStream(files, vocab, 16, 8, seed=2, pool_batches=1, collate=collate_with))
    plain, packing = make(None), make(lambda r: pack(r, vocab))
    for _ in range(8):
        a, b = next(plain), next(packing)
        assert sorted(unpacked(b.src, b.segments.src_docs, p) for p in range(16)) == sorted(
            row[row != vocab.pad_id].tolist() for row in a.src)
