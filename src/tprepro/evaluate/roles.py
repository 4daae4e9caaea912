"""Role sharpness of discrete-role models (TPT-d): how one-hot the role attention is.

The summarization paper reports that over 90% of the learned role-attention distributions
have a maximum above 0.98. Here every distribution counts once: one per real (non-pad)
token, head and discrete-role sub-layer, in encoder and decoder, from teacher-forced
passes over (question, answer) rows. They are read from the bindings' `role_probe` hooks.
Besides the overall share, each sub-layer gets its own, named by side, layer and attention
type: `enc0.self`, `dec0.self`, `dec0.cross`, ... (a shared Universal-Transformer cell is
counted per application step: `enc0.self` is step 1).
"""

from __future__ import annotations

import re
from typing import Sequence

import torch
from torch import nn

from tprepro.data.vocab import Vocab
from tprepro.models.probes import capture
from tprepro.models.tpr_bindings import DiscreteRoleBinding
from tprepro.train.callbacks import Callback

THRESHOLD = 0.98  # a distribution is "sharp" when its largest weight exceeds this


def has_discrete_roles(model: nn.Module) -> bool:
    return any(isinstance(m, DiscreteRoleBinding) for m in model.modules())


_STACKED = re.compile(r"^(encoder|decoder)\.(\d+)\.(self|cross)_attn\.")  # encoder.0.self_attn.binding...
_SHARED = re.compile(r"^(encoder|decoder)_block\.(self|cross)_attn\.")  # a Universal Transformer's one cell


def sublayer_name(module_name: str, call: int) -> str:
    """`enc0.self` / `dec1.cross` for the role probe `module_name` on its `call`-th forward."""
    stacked = _STACKED.match(module_name)
    if stacked:
        side, layer, kind = stacked.groups()
        return f"{side[:3]}{layer}.{kind}"
    shared = _SHARED.match(module_name)
    if shared:
        side, kind = shared.groups()
        return f"{side[:3]}{call}.{kind}"
    return f"{module_name}.{call}"


def _model_order(name: str) -> tuple:
    """Sort key: encoder before decoder, then layer (or step), then self- before cross-attention."""
    parsed = re.fullmatch(r"(enc|dec)(\d+)\.(self|cross)", name)
    if parsed is None:
        return (2, 0, 0, name)
    side, layer, kind = parsed.groups()
    return (side == "dec", int(layer), kind == "cross", name)


def role_peaks(model: nn.Module, vocab: Vocab, rows: Sequence[tuple[str, str]], batch_size: int
               ) -> dict[str, torch.Tensor]:
    """The largest weight of every role-attention distribution, per discrete-role sub-layer in model
    order (`enc0.self`, `dec1.cross`, ...): {sub-layer: [n_real_tokens * H]}, teacher-forced over `rows`."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    peaks: dict[str, list[torch.Tensor]] = {}
    try:
        with torch.inference_mode():
            for start in range(0, len(rows), batch_size):
                batch = vocab.collate(rows[start : start + batch_size]).to(device)  # the model's own codec
                with capture(model, "role_probe") as encoder_roles:
                    memory, src_mask = model.encode(batch.src)
                with capture(model, "role_probe") as decoder_roles:
                    model.decode(batch.tgt_in, memory, src_mask)
                for calls, real in ((encoder_roles, ~src_mask), (decoder_roles, batch.tgt_in != vocab.pad_id)):
                    for name, outputs in calls.items():
                        for call, attention in enumerate(outputs):  # [B, T, H, N_r]
                            peak = attention.amax(dim=-1)[real].flatten().cpu()  # [n_real * H]
                            peaks.setdefault(sublayer_name(name, call), []).append(peak)
    finally:
        model.train(was_training)
    return {key: torch.cat(peaks[key]) for key in sorted(peaks, key=_model_order)}


def role_sharpness(model: nn.Module, vocab: Vocab, rows: Sequence[tuple[str, str]], batch_size: int,
                   threshold: float = THRESHOLD) -> dict:
    """{"role_sharpness": share of sharp distributions, "role_distributions": their number, "threshold",
    "per_layer": {sub-layer: {"role_sharpness", "role_distributions"}}} (sub-layers in model order)."""
    peaks = role_peaks(model, vocab, rows, batch_size)
    sharp = {key: int((values > threshold).sum()) for key, values in peaks.items()}
    total = {key: values.numel() for key, values in peaks.items()}
    n = sum(total.values())
    per_layer = {key: {"role_sharpness": sharp[key] / total[key] if total[key] else float("nan"),
                       "role_distributions": total[key]} for key in peaks}
    return {"role_sharpness": sum(sharp.values()) / n if n else float("nan"), "role_distributions": n,
            "threshold": threshold, "per_layer": per_layer}


def sharpness_metrics(result: dict) -> dict[str, float]:
    """MLflow metrics of a role_sharpness result: the overall share and `role_sharpness/<sub-layer>`."""
    metrics = {"role_sharpness": result["role_sharpness"]}
    metrics.update({f"role_sharpness/{key}": layer["role_sharpness"] for key, layer in result["per_layer"].items()})
    return metrics


class RoleSharpnessCallback(Callback):
    """Role one-hotness as a training-time metric: at every checkpoint, the sharpness of a fixed
    sample of training rows (overall and per sub-layer) is logged to the training run."""

    def __init__(self, rows: Sequence[tuple[str, str]], batch_size: int, log_metrics):
        self.rows, self.batch_size, self.log_metrics = list(rows), batch_size, log_metrics
        self.trainer = None

    def on_train_start(self, trainer) -> None:
        self.trainer = trainer

    def on_checkpoint(self, step: int, path) -> None:
        result = role_sharpness(self.trainer.model, self.trainer.job.vocab, self.rows, self.batch_size)
        self.log_metrics(sharpness_metrics(result), step)
