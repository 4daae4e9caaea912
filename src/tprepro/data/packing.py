"""Packed batches: several problems per row, so a step computes (almost) no padding.

A padded batch gives every problem a row as long as the batch's longest question and answer; on the
Mathematics data at paper.yaml's batch order 37% of the positions a step computes are padding, and
random batches (the faithful order) pad more. Packing lays the same problems end to end in rows of
that width instead: each problem keeps its own source and target slot in one row, `Segments` records
which problem each position belongs to and its position within the problem, and the model attends only
within a problem (models/attention.py `document_mask`). The loss is the same sum over the same target
tokens, so a packed step is the padded step computed without most of the padding
(tests/models/test_packed_transformer.py checks loss and gradients).

Rows are filled by best fit, longest question first, so every problem fits its row in both source
and target. Rows are as wide as the padded batch (unless `multiple` rounds them up), so a packed batch
never computes more positions than the padded one, and fewer whenever two problems share a row.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

from tprepro.data.batching import Batch, Segments, encode_padded

if TYPE_CHECKING:
    from tprepro.data.vocab import Vocab

PACK_MULTIPLE = 1  # row widths are rounded up to multiples of this (1: the padded batch's widths)


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def assign_rows(src_lengths: Sequence[int], tgt_lengths: Sequence[int], src_width: int,
                tgt_width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Best-fit-decreasing placement of problems into rows of `src_width` x `tgt_width` positions.

    Problems are placed longest source first, each into the open row with the least source room that
    still holds its source and its target (a new row if none does). Returns (row [B], source offset [B],
    target offset [B], number of rows)."""
    n = len(src_lengths)
    row, src_offset, tgt_offset = (np.zeros(n, dtype=np.int64) for _ in range(3))
    src_used: list[int] = []  # per row
    tgt_used: list[int] = []
    by_room: list[tuple[int, int]] = []  # (source room left, row), sorted
    for b in sorted(range(n), key=lambda i: (-src_lengths[i], -tgt_lengths[i])):
        s, t = src_lengths[b], tgt_lengths[b]
        if s > src_width or t > tgt_width:
            raise ValueError(f"problem {b} ({s} source, {t} target positions) exceeds the row width "
                             f"({src_width}, {tgt_width})")
        slot = bisect_left(by_room, (s, -1))
        while slot < len(by_room) and tgt_used[by_room[slot][1]] + t > tgt_width:
            slot += 1
        if slot == len(by_room):
            r = len(src_used)
            src_used.append(0)
            tgt_used.append(0)
        else:
            r = by_room.pop(slot)[1]
        row[b], src_offset[b], tgt_offset[b] = r, src_used[r], tgt_used[r]
        src_used[r] += s
        tgt_used[r] += t
        insort(by_room, (src_width - src_used[r], r))
    return row, src_offset, tgt_offset, len(src_used)


def _scatter(padded: torch.Tensor, lengths: np.ndarray, row: np.ndarray, offset: np.ndarray, n_rows: int,
             width: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each problem's first `lengths[b]` ids of `padded` [B, L] placed at (row[b], offset[b] ...) of an
    [R, width] tensor. Returns (ids, problem index or -1, position within the problem), each [R, width]."""
    within = np.arange(padded.shape[1])  # [L]
    real = within[None, :] < lengths[:, None]  # [B, L]
    problem, position = np.nonzero(real)  # [N] each real position's problem and position within it
    rows, columns = row[problem], offset[problem] + position  # [N] where it goes
    ids = np.full((n_rows, width), pad_id, dtype=np.int64)  # [R, W]
    docs = np.full((n_rows, width), -1, dtype=np.int64)  # [R, W]
    positions = np.zeros((n_rows, width), dtype=np.int64)  # [R, W]
    ids[rows, columns] = padded.numpy()[real]
    docs[rows, columns] = problem
    positions[rows, columns] = position
    return torch.from_numpy(ids), torch.from_numpy(docs), torch.from_numpy(positions)


def pack(rows: Sequence[tuple[str, str]], vocab: Vocab, multiple: int = PACK_MULTIPLE) -> Batch:
    """(question, answer) rows as a packed Batch: the ids of `vocab.collate(rows)` laid end to end in
    rows as wide as its longest question and answer (rounded up to a multiple of `multiple`)."""
    questions, answers = [q for q, _ in rows], [a for _, a in rows]
    src = encode_padded(questions, vocab, vocab.bos_id, vocab.eos_id)  # [B, S]: start, question, end
    tgt_in = encode_padded(answers, vocab, start=vocab.bos_id)  # [B, T]: start, answer
    tgt_out = encode_padded(answers, vocab, end=vocab.eos_id)  # [B, T]: answer, end
    src_lengths = np.fromiter((len(q) + 2 for q in questions), dtype=np.int64, count=len(rows))
    tgt_lengths = np.fromiter((len(a) + 1 for a in answers), dtype=np.int64, count=len(rows))
    src_width, tgt_width = round_up(src.shape[1], multiple), round_up(tgt_in.shape[1], multiple)
    row, src_offset, tgt_offset, n_rows = assign_rows(src_lengths, tgt_lengths, src_width, tgt_width)
    pad = vocab.pad_id
    packed_src, src_docs, src_positions = _scatter(src, src_lengths, row, src_offset, n_rows, src_width, pad)
    packed_in, tgt_docs, tgt_positions = _scatter(tgt_in, tgt_lengths, row, tgt_offset, n_rows, tgt_width, pad)
    packed_out = _scatter(tgt_out, tgt_lengths, row, tgt_offset, n_rows, tgt_width, pad)[0]
    segments = Segments(src_docs, src_positions, tgt_docs, tgt_positions)
    return Batch(packed_src, packed_in, packed_out, n_tokens=int(tgt_lengths.sum()), segments=segments)
