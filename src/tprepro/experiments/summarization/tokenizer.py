"""The subword vocabulary (sentencepiece unigram) and the trainer's codec for summarization.

`train_subwords` fits a unigram model on a training split's documents and summaries and
stores it as one `.model` file. `SubwordCodec` is the trainer's codec (the protocol of
data.vocab.Vocab: symbols, pad_id, model_sizes, collate, state): rows are
(document, summary) pairs, documents truncated to `max_source_tokens` subwords and
summaries to `max_target_tokens`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm
import torch

from tprepro.data.batching import Batch
from tprepro.errors import TpreproError
from tprepro.io import atomic_path, read_verified, record_digest

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def train_subwords(texts: Iterable[str], vocab_size: int, path: Path, seed: int = 1) -> None:
    """Fit a sentencepiece unigram model of at most `vocab_size` pieces on `texts`; write it to `path`.

    One thread and a fixed seed: the same texts give the same model file.
    """
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    sentences = [line for text in texts for line in text.split("\n") if line.strip()]
    if not sentences:
        raise TpreproError(f"{path}: no training text for the subword model")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, model_type="unigram", vocab_size=vocab_size,
        hard_vocab_limit=False, character_coverage=1.0, num_threads=1, pad_id=PAD_ID, unk_id=UNK_ID,
        bos_id=BOS_ID, eos_id=EOS_ID, minloglevel=2, max_sentence_length=1 << 16,
    )
    with atomic_path(path) as tmp:
        tmp.write_bytes(model.getvalue())
    record_digest(path)


@dataclass(frozen=True)
class SubwordCodec:
    model_proto: bytes  # the serialized sentencepiece model (what the .model file holds)
    max_source_tokens: int  # documents are cut to this many subwords (plus the end symbol)
    max_target_tokens: int  # summaries are cut to this many subwords in training
    columns: tuple[str, str] = ("document", "summary")  # what BatchStream reads from the shards
    processor: spm.SentencePieceProcessor = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(self.model_proto)
        except (RuntimeError, OSError) as exc:
            raise TpreproError(f"not a sentencepiece model ({exc})") from exc
        object.__setattr__(self, "processor", processor)
        if (processor.pad_id(), processor.bos_id(), processor.eos_id()) != (PAD_ID, BOS_ID, EOS_ID):
            raise TpreproError("sentencepiece model: expected pad/bos/eos ids 0/2/3 (train it with train_subwords)")

    @classmethod
    def load(cls, path: str | Path, max_source_tokens: int, max_target_tokens: int) -> "SubwordCodec":
        path = Path(path)
        try:
            return cls(read_verified(path), max_source_tokens, max_target_tokens)
        except FileNotFoundError as exc:
            raise TpreproError(f"{path}: subword model not found (run the summarization data stage)") from exc
        except TpreproError as exc:
            raise TpreproError(f"{path}: {exc}") from exc

    pad_id = property(lambda self: PAD_ID)
    bos_id = property(lambda self: BOS_ID)
    eos_id = property(lambda self: EOS_ID)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(self.processor.id_to_piece(i) for i in range(len(self)))

    def __len__(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.processor.encode(text, out_type=int)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids` up to the first end symbol; pad/start symbols are dropped, and runs of
        whitespace (an undertrained model emits the word-boundary piece alone, repeatedly) become one space."""
        kept = []
        for i in ids:
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                kept.append(int(i))
        return " ".join(self.processor.decode(kept).split())

    def encode_documents(self, documents: Sequence[str]) -> torch.Tensor:
        """[B, S] source ids: truncated document, end symbol, padding."""
        return _pad([[*self.encode(d)[: self.max_source_tokens], EOS_ID] for d in documents])

    def collate(self, rows: Sequence[tuple[str, str]]) -> Batch:
        """(document, summary) rows -> src [B, S]; tgt_in = start + summary, tgt_out = summary + end."""
        summaries = [self.encode(s)[: self.max_target_tokens] for _, s in rows]
        tgt_in = _pad([[BOS_ID, *s] for s in summaries])  # [B, T]
        tgt_out = _pad([[*s, EOS_ID] for s in summaries])  # [B, T]
        return Batch(self.encode_documents([d for d, _ in rows]), tgt_in, tgt_out,
                     n_tokens=sum(len(s) + 1 for s in summaries))

    def model_sizes(self) -> dict:
        return {"vocab_size": len(self), "pad_id": PAD_ID}

    def state(self) -> dict:
        return {"codec": "sentencepiece", "model": self.model_proto, "max_source_tokens": self.max_source_tokens,
                "max_target_tokens": self.max_target_tokens}

    @staticmethod
    def accepts_state(state) -> bool:
        return isinstance(state, dict) and state.get("codec") == "sentencepiece"

    @classmethod
    def from_state(cls, state: dict) -> "SubwordCodec":
        return cls(state["model"], int(state["max_source_tokens"]), int(state["max_target_tokens"]))


def _pad(seqs: Sequence[list[int]]) -> torch.Tensor:
    out = torch.full((len(seqs), max(map(len, seqs))), PAD_ID, dtype=torch.long)  # [B, L]
    for i, seq in enumerate(seqs):
        out[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return out
