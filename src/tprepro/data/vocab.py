"""The character vocabulary shared by encoder and decoder.

Built from the training shards: every character seen at least `min_count`
times, plus pad/start/end (the paper's 72 symbols on the full release are its
69 characters plus these three) and an unknown symbol for characters that the
training data never showed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from tprepro.data.batching import collate
from tprepro.data.shards import Dataset, read_columns
from tprepro.errors import TpreproError
from tprepro.io import atomic_write_text, read_verified, record_digest

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


@dataclass(frozen=True)
class Vocab:
    symbols: tuple[str, ...]  # specials first, then characters in sorted order

    def __post_init__(self):
        object.__setattr__(self, "_index", {s: i for i, s in enumerate(self.symbols)})
        characters = {ord(s): i for i, s in enumerate(self.symbols) if len(s) == 1}
        table = np.full(max(characters, default=0) + 1, self.unk_id, dtype=np.int64)  # [max code point + 1]
        table[list(characters)] = list(characters.values())
        object.__setattr__(self, "code_table", table)  # character code point -> id (batching.encode_padded)

    pad_id = property(lambda self: 0)
    bos_id = property(lambda self: 1)
    eos_id = property(lambda self: 2)
    unk_id = property(lambda self: 3)

    def __len__(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        index, unk = self._index, self.unk_id
        return [index.get(ch, unk) for ch in text]

    def answer_ids(self, ids: Iterable[int]) -> list[int]:
        """The ids before the first end symbol (all of them if there is none)."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            out.append(int(i))
        return out

    def decode(self, ids: Iterable[int]) -> str:
        """The text up to the first end symbol; a special symbol before it is shown by name
        ("1<unk><s>2"), so a printed prediction says what the model emitted."""
        return "".join(self.symbols[i] for i in self.answer_ids(ids))

    def exact_match(self, ids: Iterable[int], answer: str) -> bool:
        """Whether predicted `ids` spell `answer` exactly: every id before the end symbol is a
        character (any special symbol, pad, start or unknown included, makes it wrong)."""
        body = self.answer_ids(ids)
        return all(i >= len(SPECIALS) for i in body) and "".join(self.symbols[i] for i in body) == answer

    # ---- the codec protocol the trainer uses (data.tuple_vocab.TupleVocab has the same) ----
    def model_sizes(self) -> dict:
        """Keyword sizes for models.build_model."""
        return {"vocab_size": len(self), "pad_id": self.pad_id}

    def collate(self, rows: Sequence[tuple[str, str]]):
        """(question, answer) rows -> a padded character Batch (data.batching.collate)."""
        return collate(rows, self)

    def state(self) -> list[str]:
        """What an exported model stores; `from_state` rebuilds the vocabulary."""
        return list(self.symbols)

    @staticmethod
    def accepts_state(state) -> bool:
        return isinstance(state, list)

    @classmethod
    def from_state(cls, state: list[str]) -> "Vocab":
        return cls(tuple(state))

    def save(self, path: str | Path) -> None:
        body = {"specials": list(SPECIALS), "characters": list(self.symbols[len(SPECIALS):])}
        atomic_write_text(path, json.dumps(body, ensure_ascii=False, indent=1) + "\n")
        record_digest(path)

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        path = Path(path)
        try:
            body = json.loads(read_verified(path).decode("utf-8"))
            specials, chars = body["specials"], body["characters"]
        except FileNotFoundError as exc:
            raise TpreproError(f"{path}: vocabulary file not found (run the vocab stage)") from exc
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise TpreproError(f"{path}: not a tprepro vocabulary ({exc})") from exc
        if tuple(specials) != SPECIALS or any(len(c) != 1 for c in chars):
            raise TpreproError(f"{path}: unexpected specials or multi-character symbols")
        return cls(tuple(specials) + tuple(chars))


def build_vocab(datasets: Sequence[Dataset], min_count: int = 1) -> Vocab:
    """Count characters of questions and answers over `datasets`, shard by shard."""
    counts: Counter[str] = Counter()
    for dataset in datasets:
        for path in dataset.files:
            table = read_columns(path, ("question", "answer"))
            for column in ("question", "answer"):
                for text in table.column(column).to_pylist():
                    counts.update(text)
    chars = sorted(ch for ch, n in counts.items() if n >= min_count)
    return Vocab(SPECIALS + tuple(chars))
