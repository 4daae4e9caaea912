"""Streaming, IID-mixed, length-sorted, resumable training batches.

Memory is bounded whatever the number of shards or rows: each dataset (e.g. one
(split, module) directory) has one small reader that visits its shards in a
seeded order per epoch and holds `read_rows` rows of one shard at a time,
shuffled. The next row comes from a dataset drawn with probability proportional
to the rows it has left this epoch, so every prefix of the stream mixes all
datasets in proportion to their sizes (a uniformly random interleaving), and
each epoch visits every row exactly once. Rows then pass a shuffle buffer of
`shuffle_buffer` rows (a random one leaves as each new one enters; the buffer
drains before the next epoch starts), which breaks up what order remains inside
a shard. Finally the rows are cut into batches, in one of two orders (`batching`):

- `pool` (the default): `pool_batches` batches' worth of rows is drawn, sorted by
  (question length, answer length) and cut into batches, which leave in a random
  order; then the next pool is drawn. A batch holds similar lengths (little
  padding) while every row still leaves within its pool, so the stream stays a
  uniformly random order at the scale of a pool: fairseq's `batch_by_size` over a
  shuffled index, made streaming. `pool_batches: 1` is plain random batches.
- `buckets`: rows wait in buckets keyed by (question length, answer length)
  // bucket_width and leave as a batch when a bucket is full. Batches are of one
  length and so, on generated data, often of one module or template, and rare
  lengths wait long: benchmarks/data_order.py measures what that costs.

The whole stream position (epoch, each reader's shard, chunk and cursor, RNG
state, the buffer and the waiting rows) is a plain dict: a checkpoint stores
it, and a resumed run draws exactly the batches an uninterrupted run would have
drawn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence

import numpy as np
import pyarrow.parquet as pq
import torch

from tprepro.data.shards import parquet_rows
from tprepro.errors import TpreproError

Row = tuple[str, str]  # (question, answer)
BATCHINGS = ("pool", "buckets")  # the batch orders of `train.batching`


class CharacterTable(Protocol):
    """The ids character problems are encoded with: data/vocab.py's Vocab (which collates with this module's
    `collate`, so the type is stated here rather than imported)."""

    code_table: np.ndarray  # [max code point + 1]: the id of each character, unk where none
    pad_id: int
    unk_id: int
    bos_id: int
    eos_id: int


class RowCollator(Protocol):
    """What a BatchStream makes batches with: a Vocab or any codec (models/interfaces.py); a codec may name the
    `columns` it reads (default question and answer)."""

    def collate(self, rows: Sequence[Row]) -> Batch: ...


@dataclass
class Segments:
    """Where the problems of a packed batch (data/packing.py) lie: for every source and target position,
    the problem's index in the batch (-1 at padding) and the position within that problem."""

    src_docs: torch.Tensor  # [R, S]
    src_positions: torch.Tensor  # [R, S]
    tgt_docs: torch.Tensor  # [R, T]
    tgt_positions: torch.Tensor  # [R, T]

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return self.src_docs, self.src_positions, self.tgt_docs, self.tgt_positions

    @property
    def problems(self) -> int:
        return int(self.tgt_docs.max()) + 1


@dataclass
class Batch:
    """Character batches have [B, T] targets; tuple batches (data.tuple_vocab) [B, T, 1 + K].
    A packed batch (`segments` set) holds several problems per row."""

    src: torch.Tensor  # [B, S] start + question + end, padded
    tgt_in: torch.Tensor  # [B, T] start + answer (teacher forcing input), padded
    tgt_out: torch.Tensor  # [B, T] answer + end, padded
    n_tokens: int  # non-pad target units (tokens, or tuples)
    segments: Segments | None = None  # packed rows only

    def to(self, device: torch.device, non_blocking: bool = False) -> "Batch":
        """On `device`; `non_blocking` copies from pinned memory overlap the work queued before them."""
        return self.map(lambda t: t.to(device, non_blocking=non_blocking))

    def map(self, function) -> "Batch":
        """A batch of `function` applied to every tensor (e.g. a move, pinning, a slice of rows)."""
        src, tgt_in, tgt_out = (function(t) for t in (self.src, self.tgt_in, self.tgt_out))
        segments = None if self.segments is None else Segments(*map(function, self.segments.tensors()))
        return Batch(src, tgt_in, tgt_out, self.n_tokens, segments)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """Every tensor of the batch: ids, then the segments' where packed."""
        return (self.src, self.tgt_in, self.tgt_out) + (() if self.segments is None else self.segments.tensors())

    @property
    def problems(self) -> int:
        """Problems in the batch: its rows, or more where packed."""
        return self.src.shape[0] if self.segments is None else self.segments.problems

    @property
    def positions(self) -> int:
        """Source and target positions the step computes, padding included."""
        return self.src.numel() + self.tgt_out.shape[0] * self.tgt_out.shape[1]


def count_targets(tgt_out: torch.Tensor, pad_id: int) -> int:
    """Non-pad target units: tokens of [B, T] targets, tuples (relation slot) of [B, T, 1 + K] ones."""
    units = tgt_out[..., 0] if tgt_out.dim() == 3 else tgt_out
    return int((units != pad_id).sum())


def _pad(seqs: Sequence[list[int]], pad_id: int) -> torch.Tensor:
    out = torch.full((len(seqs), max(map(len, seqs))), pad_id, dtype=torch.long)  # [B, L]
    for i, seq in enumerate(seqs):
        out[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return out


def encode_padded(texts: Sequence[str], vocab: CharacterTable, start: int | None = None, end: int | None = None) -> torch.Tensor:
    """[B, L] character ids of `texts`, each framed by the `start` and `end` ids where given, right-padded:
    what `_pad` of `vocab.encode` gives, in a few array operations for the whole batch (the training
    stream collates 1,024 problems a step; tests/data/test_batching.py checks the two agree)."""
    table = vocab.code_table  # [max code point + 1]: id of each character, unk where none
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))  # [B] code points
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)  # [sum(lengths)]
    ids = np.where(codes < len(table), table[np.minimum(codes, len(table) - 1)], vocab.unk_id)
    first = int(start is not None)  # column of each text's first character
    out = np.full((len(texts), int(lengths.max()) + first + int(end is not None)), vocab.pad_id, dtype=np.int64)
    row = np.repeat(np.arange(len(texts)), lengths)
    column = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + first
    out[row, column] = ids
    if start is not None:
        out[:, 0] = start
    if end is not None:
        out[np.arange(len(texts)), lengths + first] = end
    return torch.from_numpy(out)


def encode_questions(questions: Sequence[str], vocab: CharacterTable) -> torch.Tensor:
    """[B, S] source ids: start symbol, question, end symbol, padding."""
    return encode_padded(questions, vocab, vocab.bos_id, vocab.eos_id)


def collate(rows: Sequence[tuple[str, str]], vocab: CharacterTable) -> Batch:
    """Turn (question, answer) pairs into padded id tensors."""
    answers = [a for _, a in rows]
    tgt_in = encode_padded(answers, vocab, start=vocab.bos_id)  # [B, T]: start, answer, padding
    tgt_out = encode_padded(answers, vocab, end=vocab.eos_id)  # [B, T]: answer, end, padding
    src = encode_questions([q for q, _ in rows], vocab)
    return Batch(src, tgt_in, tgt_out, n_tokens=sum(map(len, answers)) + len(answers))


def as_datasets(files: Sequence[Path] | Sequence[Sequence[Path]]) -> list[list[Path]]:
    """Shards grouped per dataset; a flat list of shard paths is one dataset."""
    files = list(files)
    if files and all(isinstance(f, (str, Path)) for f in files):
        return [[Path(f) for f in files]]
    return [[Path(f) for f in group] for group in files]


class RowsLeft:
    """Rows each dataset has left this epoch, as a Fenwick tree: `draw` picks dataset i with probability
    proportional to its rows left in O(log n), and picks exactly what `rng.choices(range(n), weights=rows
    left)` picks from the same RNG state (one `rng.random()` per draw; tests/data/test_batching.py)."""

    def __init__(self, counts: Sequence[int]):
        self.size = len(counts)
        self.total = 0
        self.tree = [0] * (self.size + 1)  # tree[i]: the counts of the (i & -i) datasets ending at i (1-based)
        for index, count in enumerate(counts):
            self.add(index, count)

    def add(self, index: int, delta: int) -> None:
        self.total += delta
        index += 1
        while index <= self.size:
            self.tree[index] += delta
            index += index & -index

    def draw(self, rng: random.Random) -> int:
        """A dataset index drawn by rows left (the caller takes one row from it); the total must be positive."""
        target = rng.random() * float(self.total)  # as random.choices: a float in [0, total)
        index, below = 0, 0  # datasets 0 .. index-1 hold `below` rows, all <= target
        step = 1 << self.size.bit_length()
        while step:
            upper = index + step
            if upper <= self.size and below + self.tree[upper] <= target:
                index, below = upper, below + self.tree[upper]
            step >>= 1
        index = min(index, self.size - 1)  # random.choices' bisect is bounded by its last index
        self.add(index, -1)
        return index


class _DatasetReader:
    """One dataset's rows for one epoch: its shards in a seeded order, each read `read_rows`
    rows at a time and every such chunk shuffled; holds one chunk in memory.

    Its position is (shard position, chunk number in that shard, cursor in the chunk, rows left).
    """

    def __init__(self, index: int, files: Sequence[Path], rows: int, seed: int, epoch: int, read_rows: int,
                 position: Sequence[int] | None = None, columns: tuple[str, str] = ("question", "answer")):
        self.files = files
        self.columns = columns
        self.key = f"{seed}:{epoch}:{index}"
        self.read_rows = read_rows
        self.order = list(range(len(files)))
        random.Random(f"{self.key}:shards").shuffle(self.order)
        self.shard_pos, self.chunk, self.cursor, self.remaining = 0, -1, 0, rows
        self.rows: list[Row] = []
        self._batches = None
        if position is not None:
            shard_pos, chunk, cursor, remaining = position
            self.shard_pos = shard_pos
            for _ in range(chunk + 1):  # re-read up to the chunk it was in
                self._next_chunk()
            self.cursor, self.remaining = cursor, remaining

    @property
    def position(self) -> list[int]:
        return [self.shard_pos, self.chunk, self.cursor, self.remaining]

    def _next_chunk(self) -> bool:
        """Load the current shard's next chunk; False at the shard's end."""
        if self._batches is None:
            path = self.files[self.order[self.shard_pos]]
            try:
                handle = pq.ParquetFile(path)
                self._batches = handle.iter_batches(self.read_rows, columns=list(self.columns), use_threads=False)
            except (OSError, ValueError) as exc:
                raise TpreproError(f"{path}: not a readable parquet shard ({exc})") from exc
            self.chunk = -1
        batch = next(self._batches, None)
        if batch is None:
            return False
        self.chunk += 1
        self.rows = list(zip(batch.column(self.columns[0]).to_pylist(), batch.column(self.columns[1]).to_pylist()))
        random.Random(f"{self.key}:{self.order[self.shard_pos]}:{self.chunk}").shuffle(self.rows)
        self.cursor = 0
        return True

    def take(self) -> Row:
        while self.cursor == len(self.rows):
            if not self._next_chunk():  # this shard is done: on to the next one
                self.shard_pos += 1
                self._batches, self.rows, self.cursor = None, [], 0
                if self.shard_pos == len(self.order):
                    raise TpreproError(f"{self.files[0].parent}: fewer rows than the shard footers said")
        self.cursor += 1
        self.remaining -= 1
        return self.rows[self.cursor - 1]


class BatchStream:
    """An endless stream of training batches over `files` (shards grouped per dataset); see the module docstring."""

    def __init__(
        self,
        files: Sequence[Path] | Sequence[Sequence[Path]],
        vocab: RowCollator,
        batch_size: int,
        bucket_width: int,
        seed: int,
        shuffle_buffer: int = 1024,
        read_rows: int = 1024,
        state: dict | None = None,
        batching: str = "pool",
        pool_batches: int = 16,
        collate: Callable[[Sequence[Row]], Batch] | None = None,
    ):
        self.datasets = as_datasets(files)
        if not any(self.datasets):
            raise ValueError("BatchStream needs at least one shard")
        if shuffle_buffer < 1 or read_rows < 1 or pool_batches < 1:
            raise ValueError("BatchStream: shuffle_buffer, read_rows and pool_batches must be positive")
        if batching not in BATCHINGS:
            raise ValueError(f"BatchStream: unknown batching {batching!r}; known: {', '.join(BATCHINGS)}")
        self.sizes = [sum(parquet_rows(f) for f in group) for group in self.datasets]
        if not sum(self.sizes):
            raise TpreproError(f"{self.datasets[0][0].parent}: the training data has no rows")
        self.vocab = vocab
        self.collate = collate or vocab.collate  # rows -> a Batch (data/packing.py `pack` lays them end to end)
        self.batch_size = batch_size
        self.bucket_width = bucket_width
        self.batching = batching
        self.pool_batches = pool_batches
        self.seed = seed
        self.shuffle_buffer = shuffle_buffer
        self.read_rows = read_rows
        self.columns = tuple(getattr(vocab, "columns", ("question", "answer")))  # a codec may read others
        self.rng = random.Random(f"{seed}:stream")
        self.buffer: list[Row] = []
        self.buckets: dict[tuple[int, int], list[Row]] = {}
        self.pending: list[list[Row]] = []  # the current pool's batches not yet handed out
        self._start_epoch(0)
        if state is not None:
            self._restore(state)

    def _start_epoch(self, epoch: int, positions: Sequence[Sequence[int]] | None = None) -> None:
        self.epoch = epoch
        self.readers = [
            _DatasetReader(i, group, size, self.seed, epoch, self.read_rows, positions[i] if positions else None,
                           self.columns)
            for i, (group, size) in enumerate(zip(self.datasets, self.sizes))
        ]
        self.rows_left = RowsLeft([reader.remaining for reader in self.readers])

    def _draw(self) -> Row | None:
        """The next row of this epoch's mix (a dataset drawn by its rows left), or None when it is done."""
        if not self.rows_left.total:
            return None
        return self.readers[self.rows_left.draw(self.rng)].take()

    def _next_row(self) -> Row:
        while len(self.buffer) < self.shuffle_buffer:
            row = self._draw()
            if row is None:
                break
            self.buffer.append(row)
        if not self.buffer:  # the epoch's rows are all out
            self._start_epoch(self.epoch + 1)
            return self._next_row()
        i = self.rng.randrange(len(self.buffer))
        self.buffer[i], self.buffer[-1] = self.buffer[-1], self.buffer[i]
        return self.buffer.pop()

    def next_rows(self) -> list[Row]:
        """The next batch of (question, answer) rows, in the order `batching` names."""
        if self.batching == "buckets":
            return self._next_bucket()
        if not self.pending:
            self.pending = self._sorted_pool()
        return self.pending.pop()

    def _sorted_pool(self) -> list[list[Row]]:
        """`pool_batches` batches cut from a length-sorted pool of the next rows, in a random order."""
        pool = [self._next_row() for _ in range(self.pool_batches * self.batch_size)]
        pool.sort(key=lambda row: (len(row[0]), len(row[1])))  # stable: equal lengths keep the random order
        batches = [pool[start : start + self.batch_size] for start in range(0, len(pool), self.batch_size)]
        self.rng.shuffle(batches)
        return batches

    def _next_bucket(self) -> list[Row]:
        """The next full bucket of rows of similar (question, answer) lengths."""
        width = self.bucket_width
        while True:
            question, answer = self._next_row()
            key = (len(question) // width, len(answer) // width)
            bucket = self.buckets.setdefault(key, [])
            bucket.append((question, answer))
            if len(bucket) == self.batch_size:
                del self.buckets[key]
                return bucket

    def __iter__(self) -> Iterator[Batch]:
        while True:
            yield self.collate(self.next_rows())

    def held_rows(self) -> int:
        """Rows in memory: the readers' chunks, the shuffle buffer, the buckets and the pool's batches."""
        return (sum(len(r.rows) for r in self.readers) + len(self.buffer)
                + sum(len(rows) for rows in self.buckets.values()) + sum(len(rows) for rows in self.pending))

    def state_dict(self) -> dict:
        return {
            "epoch": self.epoch,
            "readers": [reader.position for reader in self.readers],
            "rng": self.rng.getstate(),
            "buffer": list(self.buffer),  # copies: rows keep moving
            "buckets": [(list(k), list(rows)) for k, rows in self.buckets.items()],
            "pending": [list(rows) for rows in self.pending],
        }

    def _restore(self, state: dict) -> None:
        if len(state["readers"]) != len(self.datasets):
            raise TpreproError(f"stream state has {len(state['readers'])} datasets, the data {len(self.datasets)}")
        self._start_epoch(state["epoch"], state["readers"])
        self.rng.setstate(_as_rng_state(state["rng"]))
        self.buffer = [tuple(row) for row in state["buffer"]]
        self.buckets = {tuple(k): [tuple(r) for r in rows] for k, rows in state["buckets"]}
        self.pending = [[tuple(r) for r in rows] for rows in state.get("pending", [])]  # absent before pools


def _as_rng_state(state) -> tuple:
    """random.Random states come back from serialisation as lists; make them tuples."""
    version, internal, gauss = state
    return (version, tuple(internal), gauss)
