"""data/prefetch.py: batches made ahead on a thread are the stream's own, in order, each with the state after it."""

import pytest
import torch

from tprepro.data.batching import BatchStream
from tprepro.data.prefetch import Prefetcher, prefetch_depth
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab

from helpers import arithmetic_rows, write_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prefetch") / "d"
    data = open_dataset(write_dataset(folder, arithmetic_rows(200, seed=3), rows_per_shard=32))
    return data, build_vocab([data])


def stream(dataset, state=None) -> BatchStream:
    data, vocab = dataset
    return BatchStream(data.files, vocab, batch_size=8, bucket_width=8, seed=4, shuffle_buffer=16, read_rows=8,
                       state=state, pool_batches=4)


def same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip((a.src, a.tgt_in, a.tgt_out), (b.src, b.tgt_in, b.tgt_out)))


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_the_batches_are_the_streams_in_order_and_each_state_resumes_after_it(dataset, depth):
    expected = [batch for batch, _ in zip(stream(dataset), range(40))]  # 40 batches: past an epoch of 200 rows
    with Prefetcher(stream(dataset), depth) as prefetch:
        got = [next(prefetch) for _ in range(40)]
    assert all(same(batch, want) for (batch, _), want in zip(got, expected))
    _, state_after_20 = got[19]
    resumed = iter(stream(dataset, state=state_after_20))
    assert all(same(next(resumed), want) for want in expected[20:])


def test_a_failure_while_making_a_batch_is_raised_by_next(dataset):
    broken = stream(dataset)
    broken.next_rows = lambda: (_ for _ in ()).throw(OSError("shard vanished"))
    prefetch = Prefetcher(broken, depth=2)
    with pytest.raises(OSError, match="shard vanished"):
        next(prefetch)
    prefetch.close()


def test_close_stops_the_thread_while_the_queue_is_full(dataset):
    prefetch = Prefetcher(stream(dataset), depth=2)
    next(prefetch)
    thread = prefetch._thread
    prefetch.close()
    assert not thread.is_alive()


def test_auto_prefetches_on_cuda_only_and_a_number_is_kept():
    assert prefetch_depth("auto", torch.device("cuda")) == 2
    assert prefetch_depth("auto", torch.device("cpu")) == 0  # the thread would share the cores with the step
    assert prefetch_depth(3, torch.device("cpu")) == 3 and prefetch_depth(0, torch.device("cuda")) == 0
