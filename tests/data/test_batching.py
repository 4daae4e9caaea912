"""Streaming mixed, length-sorted batches: coverage, pools and buckets, bounded memory, exact resume."""

import random
from collections import Counter

import pytest
import torch

from tprepro.data.batching import BatchStream, RowsLeft, collate
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.data.vocab import Vocab, build_vocab
from tprepro.errors import TpreproError

from helpers import arithmetic_rows, generated_mathematics, write_dataset


@pytest.fixture()
def shards(tmp_path):
    rows = arithmetic_rows(240, seed=0)
    dataset = open_dataset(write_dataset(tmp_path / "d", rows, rows_per_shard=40))
    return dataset, rows


def test_one_epoch_visits_every_row_once(shards):
    dataset, rows = shards
    stream = BatchStream(dataset.files, build_vocab([dataset]), batch_size=1, bucket_width=1000, seed=3)
    seen = Counter(tuple(stream.next_rows()[0]) for _ in range(len(rows)))
    assert seen == Counter((r["question"], r["answer"]) for r in rows)
    assert stream.epoch == 0


def test_buckets_hold_one_length_class(shards):
    dataset, _ = shards
    stream = BatchStream(dataset.files, build_vocab([dataset]), batch_size=8, bucket_width=4, seed=1,
                         batching="buckets")
    for _ in range(20):
        rows = stream.next_rows()
        assert len({(len(q) // 4, len(a) // 4) for q, a in rows}) == 1


def test_a_pool_is_cut_into_length_sorted_batches_in_a_random_order(shards):
    dataset, _ = shards
    length = lambda row: (len(row[0]), len(row[1]))
    leave_sorted = []
    for seed in range(4):
        stream = BatchStream(dataset.files, build_vocab([dataset]), batch_size=8, bucket_width=4, seed=seed,
                             pool_batches=5)
        pool = [stream.next_rows() for _ in range(5)]  # exactly one pool
        assert not stream.pending
        for batch in pool:
            assert [length(r) for r in batch] == sorted(length(r) for r in batch)
        ranges = sorted((length(b[0]), length(b[-1])) for b in pool)  # the batches tile the sorted pool
        assert all(hi <= lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))
        leave_sorted.append([length(b[0]) for b in pool] == [lo for lo, _ in ranges])
    assert not all(leave_sorted)  # batches leave in a random order, not shortest first


def test_pool_batches_spread_lengths_less_than_random_batches(shards):
    dataset, _ = shards
    vocab = build_vocab([dataset])

    def spread(pool_batches):  # mean question-length range within a batch over one epoch
        stream = BatchStream(dataset.files, vocab, batch_size=8, bucket_width=4, seed=1, pool_batches=pool_batches)
        batches = [stream.next_rows() for _ in range(30)]
        return sum(max(len(q) for q, _ in b) - min(len(q) for q, _ in b) for b in batches) / len(batches)

    assert spread(15) < spread(1)


@pytest.mark.parametrize("batching", ["pool", "buckets"])
def test_every_row_leaves_once_per_epoch_in_either_order(shards, batching):
    dataset, rows = shards
    stream = BatchStream(dataset.files, build_vocab([dataset]), batch_size=8, bucket_width=1000, seed=2,
                         batching=batching, pool_batches=3)
    seen = Counter(tuple(r) for _ in range(len(rows) // 8) for r in stream.next_rows())
    assert seen == Counter((r["question"], r["answer"]) for r in rows)


def test_an_unknown_batching_is_refused(shards):
    dataset, _ = shards
    with pytest.raises(ValueError, match="unknown batching 'sorted'"):
        BatchStream(dataset.files, build_vocab([dataset]), 8, 4, seed=1, batching="sorted")


@pytest.fixture()
def modules(tmp_path):
    """Three datasets of different sizes and shard counts (one per module, as the pipeline has)."""
    sizes = {"a": 240, "b": 120, "c": 60}
    datasets = [open_dataset(write_dataset(tmp_path / m, arithmetic_rows(n, seed=i, module=m), rows_per_shard=25))
                for i, (m, n) in enumerate(sizes.items())]
    return datasets, build_vocab(datasets)


def test_memory_is_bounded_whatever_the_shard_count(modules):
    datasets, vocab = modules
    stream = BatchStream([ds.files for ds in datasets], vocab, batch_size=4, bucket_width=8, seed=1,
                         shuffle_buffer=10, read_rows=7)
    for _ in range(300):  # several epochs
        stream.next_rows()
        held_by_readers = sum(len(r.rows) for r in stream.readers)
        assert held_by_readers <= len(datasets) * 7 and len(stream.buffer) <= 10
    assert stream.epoch >= 2


def test_every_epoch_visits_every_row_of_every_dataset_once(modules):
    datasets, vocab = modules
    stream = BatchStream([ds.files for ds in datasets], vocab, batch_size=1, bucket_width=1000, seed=5,
                         shuffle_buffer=16, read_rows=9, pool_batches=1)  # pools may straddle epochs
    everything = Counter((r["question"], r["answer"]) for ds in datasets for r in iter_rows(ds))
    for epoch in range(2):
        seen = Counter(tuple(stream.next_rows()[0]) for _ in range(sum(everything.values())))
        assert seen == everything and stream.epoch == epoch


def test_seeds_change_the_order_and_equal_seeds_repeat_it(modules):
    datasets, vocab = modules
    files = [ds.files for ds in datasets]

    def draw(seed):
        stream = BatchStream(files, vocab, 4, 8, seed=seed)
        return [stream.next_rows() for _ in range(30)]

    assert draw(2) == draw(2) != draw(3)


@pytest.mark.parametrize("buffer, read_rows, batching", [(1, 1, "buckets"), (16, 7, "buckets"),
                                                         (500, 1000, "buckets"), (16, 7, "pool"), (500, 1000, "pool")])
def test_restored_stream_continues_identically(modules, buffer, read_rows, batching):
    datasets, vocab = modules
    files = [ds.files for ds in datasets]
    make = lambda state=None: BatchStream(files, vocab, 6, 4, seed=7, shuffle_buffer=buffer,
                                          read_rows=read_rows, state=state, batching=batching, pool_batches=4)
    reference = make()
    expected = [reference.next_rows() for _ in range(150)]  # past the first epoch (420 rows)
    first = make()
    head = [first.next_rows() for _ in range(37)]
    state = first.state_dict()
    import pickle  # the checkpoint path: state survives serialisation

    resumed = make(pickle.loads(pickle.dumps(state)))
    middle = [resumed.next_rows() for _ in range(60)]
    again = make(pickle.loads(pickle.dumps(resumed.state_dict())))  # a second resume, in epoch 1
    tail = [again.next_rows() for _ in range(53)]
    assert head + middle + tail == expected


def test_a_flat_list_of_shards_is_one_dataset(shards):
    dataset, _ = shards
    stream = BatchStream(dataset.files, build_vocab([dataset]), batch_size=2, bucket_width=8, seed=1)
    assert len(stream.readers) == 1 and stream.sizes == [dataset.rows]


def test_a_corrupt_shard_is_named(modules, tmp_path):
    datasets, vocab = modules
    broken = datasets[1].files[2]
    broken.write_bytes(b"not parquet")
    with pytest.raises(TpreproError, match=str(broken)):
        BatchStream([ds.files for ds in datasets], vocab, 4, 8, seed=1)


def test_collate_shapes_and_specials():
    vocab = Vocab(("<pad>", "<s>", "</s>", "<unk>", "1", "2", "?", "a"))
    batch = collate([("a1?", "12"), ("a?", "2")], vocab)
    assert batch.src.tolist() == [[1, 7, 4, 6, 2], [1, 7, 6, 2, 0]]
    assert batch.tgt_in.tolist() == [[1, 4, 5], [1, 5, 0]]
    assert batch.tgt_out.tolist() == [[4, 5, 2], [5, 2, 0]]
    assert batch.n_tokens == 5
    assert vocab.decode([4, 5, 2, 4]) == "12" and vocab.encode("z") == [vocab.unk_id]


def padding_share(stream, vocab, batches: int = 60) -> float:
    """Padded positions over all positions in the first `batches` batches (source and target)."""
    pad = total = 0
    for _, batch in zip(range(batches), stream):
        for tensor in (batch.src, batch.tgt_out):
            pad += int((tensor == vocab.pad_id).sum())
            total += tensor.numel()
    return pad / total


def test_padding_falls_from_random_batches_to_pools_to_buckets(tmp_path, generate_python, monkeypatch):
    """The padding each batch order costs, on the real generator's problems of several modules."""
    datasets, vocab = generated_mathematics(tmp_path, monkeypatch, generate_python,
                                            ("algebra__linear_1d", "numbers__place_value", "calculus__differentiate"),
                                            120, 1)

    def order(**options):
        return padding_share(BatchStream([d.files for d in datasets], vocab, batch_size=8, bucket_width=8, seed=2,
                                         shuffle_buffer=64, read_rows=32, **options), vocab)

    random_batches, pools, buckets = order(pool_batches=1), order(pool_batches=8), order(batching="buckets")
    assert random_batches > 0.3  # three modules of very different lengths in one batch
    assert pools < 0.75 * random_batches
    assert buckets < pools


def collate_row_by_row(rows, vocab):
    """The collation before encode_padded: each text encoded and padded on its own."""
    def pad(seqs):
        out = torch.full((len(seqs), max(map(len, seqs))), vocab.pad_id, dtype=torch.long)
        for i, seq in enumerate(seqs):
            out[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        return out

    answers = [vocab.encode(a) for _, a in rows]
    return (pad([[vocab.bos_id, *vocab.encode(q), vocab.eos_id] for q, _ in rows]),
            pad([[vocab.bos_id, *a] for a in answers]), pad([[*a, vocab.eos_id] for a in answers]),
            sum(len(a) + 1 for a in answers))


def test_batch_collation_equals_encoding_row_by_row(tmp_path, generate_python, monkeypatch):
    """Real problems of three modules, and texts with characters the vocabulary lacks (ASCII, accented,
    beyond the basic plane) and an empty answer: the same tensors as encoding each text on its own."""
    datasets, vocab = generated_mathematics(tmp_path, monkeypatch, generate_python,
                                            ("algebra__linear_1d", "polynomials__expand", "comparison__sort"), 64, 3)
    rows = [(r["question"], r["answer"]) for d in datasets for r in iter_rows(d)]
    odd = [("What is é + 𝛑 ~ 2?", ""), ("Ω", "€9"), ("", "1")]
    for batch_rows in (rows[:64], rows[64:], odd + rows[:5]):
        batch = collate(batch_rows, vocab)
        src, tgt_in, tgt_out, n_tokens = collate_row_by_row(batch_rows, vocab)
        assert torch.equal(batch.src, src) and torch.equal(batch.tgt_in, tgt_in) and torch.equal(batch.tgt_out, tgt_out)
        assert batch.n_tokens == n_tokens and batch.src.dtype == torch.long


@pytest.mark.parametrize("counts", [[5, 0, 17, 1, 0, 9, 3], [1], [0, 0, 4],
                                    [random.Random(i).randint(0, 2_000_000) for i in range(168)]])
def test_drawing_by_rows_left_picks_what_random_choices_picks(counts):
    """RowsLeft.draw against `random.choices` by rows left (what the stream drew before it), from the same
    RNG state, down to the last row; with the paper's 168 datasets of up to 2 million rows, 20,000 draws."""
    left, reference = RowsLeft(counts), list(counts)
    ours, theirs = random.Random(7), random.Random(7)
    for _ in range(min(sum(counts), 20_000)):
        drawn = left.draw(ours)
        expected = theirs.choices(range(len(reference)), weights=reference)[0]
        assert drawn == expected
        reference[expected] -= 1
    assert left.total == sum(reference)
