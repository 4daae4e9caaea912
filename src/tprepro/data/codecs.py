"""Codec kinds: rebuilding an exported model's codec from its stored state, and answering with it.

The core knows one codec, the character `Vocab`. An experiment with a codec of its own (N2F's
tuple vocabularies, summarization's subword model) declares a `CodecKind` in its `Experiment`;
the experiment registry registers it here by import path when the experiments are listed, so the
core loads such a model without importing any experiment by name. Codecs are named by import
path and imported on first use: listing the experiments must not need torch (the data stages run
in the generation environment, which has none).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from tprepro.errors import TpreproError


@dataclass(frozen=True)
class CodecKind:
    codec: str  # "module:Class" of a codec with state(), from_state(state) and accepts_state(state)
    # "module:function"(model, codec, model_dir, questions, batch_size, max_length) -> one dict per
    # question: what `tprepro predict` prints for a model of this kind (None: greedy text answers)
    answer: str | None = None


CHARACTERS = CodecKind("tprepro.data.vocab:Vocab")
_REGISTERED: list[CodecKind] = []


def register(kind: CodecKind) -> None:
    """Make `kind` known to `codec_from_state` and `kind_of` (registering twice is harmless)."""
    if kind not in _REGISTERED:
        _REGISTERED.append(kind)


def load_object(path: str) -> Any:
    """The object a "module:name" path names."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _kinds() -> list[CodecKind]:
    return [*_REGISTERED, CHARACTERS]


def _module_of(kind: CodecKind) -> str:
    return kind.codec.partition(":")[0]


def codec_from_state(state: Any, where: str) -> Any:
    """The codec whose stored state `state` is (read from `where`, named in the error). The kinds whose
    module is imported already are tried first (each kind's states are its own), so a stage loading its
    own experiment's model imports no other experiment's codec."""
    import sys

    for kind in sorted(_kinds(), key=lambda kind: _module_of(kind) not in sys.modules):
        codec = load_object(kind.codec)
        if codec.accepts_state(state):
            return codec.from_state(state)
    known = ", ".join(kind.codec.rpartition(":")[2] for kind in _kinds())
    raise TpreproError(f"{where}: its vocabulary is of no registered kind (known: {known})")


def kind_of(codec: Any) -> CodecKind:
    """The registered kind of a codec object (by its class's import path: no other codec is imported)."""
    path = f"{type(codec).__module__}:{type(codec).__qualname__}"
    for kind in _kinds():
        if kind.codec == path:
            return kind
    raise TpreproError(f"{type(codec).__name__}: no registered codec kind")
