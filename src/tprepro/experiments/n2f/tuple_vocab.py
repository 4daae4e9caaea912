"""The vocabularies of an N2F task: source words, output relations, output arguments.

TP-N2F (Sec. 3.3) selects a tuple's relation from the relation vocabulary and each
argument from the argument vocabulary, so the two output vocabularies are
separate; the source is whitespace-tokenised words. Built from the training
rows: every word seen at least `min_count` times (others map to <unk>), every
relation and argument the training programs use.

`TupleVocab` is the trainer's codec for these tasks (same protocol as
data.vocab.Vocab): `collate` turns (question, program string) rows into a Batch
with [B, S] word ids and [B, T, 1 + K] tuple targets.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from tprepro.data.batching import Batch
from tprepro.data.shards import Dataset, read_columns
from tprepro.experiments.n2f.tuples import (ARG_NONE, ARG_PAD, NO_ARG, REL_BOS, REL_EOS, REL_PAD, Program,
                                 parse_program)
from tprepro.errors import TpreproError
from tprepro.io import atomic_write_text, read_verified, record_digest
from tprepro.data.tuple_ids import RELATION_SPECIALS

WORD_SPECIALS = ("<pad>", "<unk>")
ARGUMENT_SPECIALS = ("<pad>", NO_ARG, "<unk>")  # ids ARG_PAD, ARG_NONE, 2


@dataclass(frozen=True)
class TupleVocab:
    words: tuple[str, ...]  # WORD_SPECIALS, then words in sorted order
    relations: tuple[str, ...]  # RELATION_SPECIALS, then relations
    arguments: tuple[str, ...]  # ARGUMENT_SPECIALS, then arguments
    arity: int  # K: arguments per tuple

    def __post_init__(self):
        for name, specials in (("words", WORD_SPECIALS), ("relations", RELATION_SPECIALS),
                               ("arguments", ARGUMENT_SPECIALS)):
            if getattr(self, name)[: len(specials)] != specials:
                raise TpreproError(f"tuple vocabulary: {name} must start with {specials}")
        object.__setattr__(self, "_word", {w: i for i, w in enumerate(self.words)})
        object.__setattr__(self, "_rel", {r: i for i, r in enumerate(self.relations)})
        object.__setattr__(self, "_arg", {a: i for i, a in enumerate(self.arguments)})

    pad_id = property(lambda self: 0)  # source padding
    word_unk = property(lambda self: 1)
    relation_unk = property(lambda self: 3)
    argument_unk = property(lambda self: 2)

    @property
    def symbols(self) -> tuple[str, ...]:
        """Every entry, tagged by vocabulary: what training fingerprints."""
        return (*(f"w:{w}" for w in self.words), *(f"r:{r}" for r in self.relations),
                *(f"a:{a}" for a in self.arguments), f"arity:{self.arity}")

    def __len__(self) -> int:
        return len(self.words)

    # ---- encoding ---------------------------------------------------------------------------
    def encode_words(self, question: str) -> list[int]:
        return [self._word.get(w, self.word_unk) for w in question.split()]

    def encode_tuple(self, item: Sequence[str]) -> list[int]:
        return [self._rel.get(item[0], self.relation_unk),
                *(self._arg.get(a, self.argument_unk) for a in item[1:])]

    def decode_program(self, ids: torch.Tensor | Sequence[Sequence[int]]) -> Program:
        """[T, 1 + K] predicted ids -> tuples, up to the first end tuple (excluded)."""
        program = []
        for row in (ids.tolist() if isinstance(ids, torch.Tensor) else ids):
            if row[0] in (REL_EOS, REL_PAD):
                break
            program.append((self.relations[row[0]], *(self.arguments[a] for a in row[1:])))
        return program

    def encode_sources(self, questions: Sequence[str]) -> torch.Tensor:
        """[B, S] word ids, padded (at least one position per row)."""
        seqs = [self.encode_words(q) or [self.word_unk] for q in questions]
        out = torch.full((len(seqs), max(map(len, seqs))), self.pad_id, dtype=torch.long)
        for i, seq in enumerate(seqs):
            out[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        return out

    def collate(self, rows: Sequence[tuple[str, str]]) -> Batch:
        """(question, program string) rows -> src [B, S], tgt_in / tgt_out [B, T, 1 + K].

        tgt_in starts with the start tuple (<bos>, <none>, ...); tgt_out ends with the end
        tuple (<eos>, <none>, ...); shorter programs are padded with (<pad>, <pad>, ...).
        """
        width = 1 + self.arity
        start = [REL_BOS] + [ARG_NONE] * self.arity
        end = [REL_EOS] + [ARG_NONE] * self.arity
        programs = [[self.encode_tuple(t) for t in parse_program(a, self.arity)] for _, a in rows]
        length = 1 + max(map(len, programs))
        tgt_in = torch.full((len(rows), length, width), ARG_PAD, dtype=torch.long)  # [B, T, 1+K]
        tgt_out = torch.full((len(rows), length, width), ARG_PAD, dtype=torch.long)  # [B, T, 1+K]
        tgt_in[..., 0] = REL_PAD
        tgt_out[..., 0] = REL_PAD
        for i, program in enumerate(programs):
            tgt_in[i, : len(program) + 1] = torch.tensor([start, *program], dtype=torch.long)
            tgt_out[i, : len(program) + 1] = torch.tensor([*program, end], dtype=torch.long)
        src = self.encode_sources([q for q, _ in rows])
        return Batch(src, tgt_in, tgt_out, n_tokens=sum(len(p) + 1 for p in programs))

    # ---- the codec protocol -------------------------------------------------------------------
    def model_sizes(self) -> dict:
        return {"vocab_size": len(self.words), "pad_id": self.pad_id,
                "n_relations": len(self.relations), "n_arguments": len(self.arguments)}

    def state(self) -> dict:
        return {"words": list(self.words), "relations": list(self.relations),
                "arguments": list(self.arguments), "arity": self.arity}

    @staticmethod
    def accepts_state(state) -> bool:
        return isinstance(state, dict) and "words" in state

    @classmethod
    def from_state(cls, state: dict) -> "TupleVocab":
        return cls(tuple(state["words"]), tuple(state["relations"]), tuple(state["arguments"]),
                   int(state["arity"]))

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.state(), ensure_ascii=False, indent=1) + "\n")
        record_digest(path)

    @classmethod
    def load(cls, path: str | Path) -> "TupleVocab":
        path = Path(path)
        try:
            return cls.from_state(json.loads(read_verified(path).decode("utf-8")))
        except FileNotFoundError as exc:
            raise TpreproError(f"{path}: vocabulary file not found (run the vocab stage)") from exc
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:  # UnicodeDecodeError too
            raise TpreproError(f"{path}: not a tuple vocabulary ({exc})") from exc


def build_tuple_vocab(rows: Iterable[tuple[str, str]], arity: int, min_count: int = 1) -> TupleVocab:
    """Vocabularies of (question, program string) training rows."""
    words: Counter[str] = Counter()
    relations: set[str] = set()
    arguments: set[str] = set()
    for question, answer in rows:
        words.update(question.split())
        for item in parse_program(answer, arity):
            relations.add(item[0])
            arguments.update(item[1:])
    return TupleVocab(
        WORD_SPECIALS + tuple(sorted(w for w, n in words.items() if n >= min_count and w not in WORD_SPECIALS)),
        RELATION_SPECIALS + tuple(sorted(relations - set(RELATION_SPECIALS))),
        ARGUMENT_SPECIALS + tuple(sorted(arguments - set(ARGUMENT_SPECIALS))),
        arity,
    )


def dataset_rows(datasets: Sequence[Dataset]) -> Iterable[tuple[str, str]]:
    """(question, answer) of every row of `datasets`, shard by shard."""
    for dataset in datasets:
        for path in dataset.files:
            table = read_columns(path, ("question", "answer"))
            yield from zip(table.column("question").to_pylist(), table.column("answer").to_pylist())
