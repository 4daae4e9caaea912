"""What the trainer may ask of a model and of a codec, declared once (typing.Protocol).

Every model is an `nn.Module` whose `forward(src, tgt_in)` returns its output (logits
[B, T, V] for sequence models). Two hooks are optional:
- `TargetLoss`: targets that are not token sequences (TP-N2F's tuples) bring their own loss;
- `AuxiliaryLoss`: extra terms of the last forward (the ACT ponder cost), added to the loss.
A codec turns (question, answer) rows into batches (character vocabulary, tuple vocabularies,
subword model).
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from torch import Tensor


@runtime_checkable
class TargetLoss(Protocol):
    def target_loss(self, output, tgt_out: Tensor, reduction: str = "mean") -> Tensor:
        """The loss of `output` against `tgt_out`: "mean" over target units, or their "sum"."""


@runtime_checkable
class AuxiliaryLoss(Protocol):
    def auxiliary_loss(self) -> Tensor:
        """A scalar computed in the last forward, added to the training loss (with its gradient)."""


class Codec(Protocol):
    pad_id: int

    def __len__(self) -> int: ...

    def model_sizes(self) -> dict:
        """Keyword sizes for build_model (e.g. vocab_size)."""

    def collate(self, rows: Sequence[tuple[str, str]]):
        """Rows -> a padded Batch."""

    def state(self):
        """Plain values that rebuild the codec (stored in checkpoints and model.pt)."""
