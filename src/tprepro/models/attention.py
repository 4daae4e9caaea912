"""(TP-)Multi-Head Attention, Eq. 3-6: one module for every attention in every variant."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tprepro.models.binding import build_binding

if TYPE_CHECKING:
    # Imported where used, not here: importing FlexAttention into a data-parallel CPU process made gloo's
    # teardown deadlock (tests/train/test_distributed.py hung at exit, torch 2.13).
    from torch.nn.attention.flex_attention import BlockMask

AttentionMask = Union[Tensor, "BlockMask"]  # a dense bool mask (True = may attend) or FlexAttention's block mask

_flex_masks: bool | None = None  # document_mask's default kind; None: by device (set by masks_of_kind)


@contextmanager
def masks_of_kind(flex: bool | None) -> Iterator[None]:
    """Within it, packed batches' masks are FlexAttention block masks (True), dense bool masks (False) or
    chosen by device (None). A plain module global, not a ContextVar: a compiled forward only guards on it."""
    global _flex_masks
    before, _flex_masks = _flex_masks, flex
    try:
        yield
    finally:
        _flex_masks = before


@dataclass
class KVCache:
    """Keys and values of one attention module during incremental decoding."""

    k: Tensor | None = None  # [B, H, T_k, d_k]
    v: Tensor | None = None  # [B, H, T_k, d_k]

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.size(2)


def document_mask(query_docs: Tensor, key_docs: Tensor, causal: bool = False,
                  flex: bool | None = None) -> AttentionMask:
    """Which keys each query of a packed batch (data/packing.py) may attend to: those of its own problem,
    and with `causal` none after itself. query_docs: [R, T_q], key_docs: [R, T_k], each position's problem
    (-1 at padding). A padding query may attend to every key, so that no softmax row is empty (no real
    position attends to padding, so padding reaches no loss).

    `flex` (default: masks_of_kind's, else on CUDA) gives a FlexAttention BlockMask (blocks of other
    problems are skipped), else a dense bool mask [R, 1, T_q, T_k] for scaled_dot_product_attention: both
    give the same attention (tests/models/test_packed_transformer.py)."""
    flex = _flex_masks if flex is None else flex
    if query_docs.is_cuda if flex is None else flex:
        from torch.nn.attention.flex_attention import create_block_mask

        def allowed_mod(row, head, q, k):
            allowed = (query_docs[row, q] == key_docs[row, k]) | (query_docs[row, q] < 0)
            return allowed & (k <= q) if causal else allowed

        rows, t_q, t_k = query_docs.shape[0], query_docs.shape[1], key_docs.shape[1]
        return create_block_mask(allowed_mod, rows, None, t_q, t_k, device=query_docs.device)
    allowed = (query_docs[:, :, None] == key_docs[:, None, :]) | (query_docs[:, :, None] < 0)  # [R, T_q, T_k]
    if causal:
        allowed = allowed & torch.ones(allowed.shape[1:], dtype=torch.bool, device=allowed.device).tril()
    return allowed[:, None]  # [R, 1, T_q, T_k]


class MultiHeadAttention(nn.Module):
    """TPMHA(x, source) = W^(o) [bind(softmax(q k^T / sqrt(d_k)) v, x)]_heads + b^(o).

    q comes from the query-side input x, k and v from `source` (x itself for
    self-attention, the encoder memory for cross-attention); the binding uses x.
    With `record_probs` set (see probes.record_attention) the probabilities are
    computed explicitly and pass through `attention_probe` ([B, H, T_q, T_k]);
    otherwise scaled_dot_product_attention computes them internally.
    `binding_options` (n_roles, d_role) go to the binding; the layer passes the
    sub-layer output after the residual through `bind_residual` (see binding.py).
    """

    def __init__(self, d_model: int, n_heads: int, binding: str, **binding_options):
        super().__init__()
        self.n_heads = n_heads  # H
        self.d_k = d_model // n_heads  # per-head query/key/value width
        self.q_proj = nn.Linear(d_model, d_model)  # W^(q), b^(q) of all heads
        self.k_proj = nn.Linear(d_model, d_model)  # W^(k), b^(k)
        self.v_proj = nn.Linear(d_model, d_model)  # W^(v), b^(v)
        self.binding = build_binding(binding, d_model, n_heads, **binding_options)
        self.out_proj = nn.Linear(n_heads * self.binding.d_out, d_model)  # W^(o); b^(o) = sum_h b^(o,h)
        self.attention_probe = nn.Identity()  # hook point for attention probabilities
        self.record_probs = False

    def bind_residual(self, f: Tensor) -> Tensor:
        """The binding's step on the residual stream, f = x + MHA(x): [B, T, D] -> [B, T, D]."""
        return self.binding.bind_residual(f)

    def _heads(self, t: Tensor) -> Tensor:
        batch, length, _ = t.shape
        return t.view(batch, length, self.n_heads, self.d_k).transpose(1, 2)  # [B, H, T, d_k]

    def forward(
        self,
        x: Tensor,
        source: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        cache: KVCache | None = None,
        attn_mask: AttentionMask | None = None,
    ) -> Tensor:
        """x: [B, T_q, D]; source: [B, T_k, D] or None (self-attention); key_padding_mask:
        [B, T_k] bool, True = padding. With `cache`, self-attention appends this call's
        keys/values and cross-attention (source given) computes them once and reuses them.
        `attn_mask` (packed batches, `document_mask`): bool [B, 1, T_q, T_k], True = may attend,
        or a BlockMask, which runs FlexAttention and stands for every other mask.
        Returns [B, T_q, D]."""
        length = x.shape[1]  # T_q
        q = self._heads(self.q_proj(x))  # [B, H, T_q, d_k]
        if cache is not None and source is not None and cache.k is not None:  # cross-attention: reuse
            k, v = cache.k, cache.v  # [B, H, T_k, d_k]
        else:
            kv_in = x if source is None else source  # [B, T_new, D]
            k = self._heads(self.k_proj(kv_in))  # [B, H, T_new, d_k]
            v = self._heads(self.v_proj(kv_in))  # [B, H, T_new, d_k]
            if cache is not None:
                if source is None and cache.k is not None:  # self-attention: append this step
                    k = torch.cat([cache.k, k], dim=2)  # [B, H, T_k, d_k]
                    v = torch.cat([cache.v, v], dim=2)  # [B, H, T_k, d_k]
                cache.k, cache.v = k, v

        if attn_mask is not None and not isinstance(attn_mask, Tensor):  # a BlockMask: FlexAttention
            from torch.nn.attention.flex_attention import flex_attention

            if self.record_probs:
                raise ValueError("attention probes read padded batches; this one is packed under a BlockMask")
            filler = flex_attention(q, k, v, block_mask=attn_mask)  # [B, H, T_q, d_k]
            return self._bind_heads(filler, x)
        allowed = attn_mask  # bool, True = may attend, broadcast to [B, H, T_q, T_k]
        if causal:
            t_k = k.size(2)
            # Query i sits at absolute position t_k - T_q + i and sees keys up to it.
            before = torch.ones(length, t_k, dtype=torch.bool, device=x.device).tril(t_k - length)  # [T_q, T_k]
            allowed = before if allowed is None else allowed & before
        if key_padding_mask is not None:
            keep = ~key_padding_mask[:, None, None, :]  # [B, 1, 1, T_k]
            allowed = keep if allowed is None else allowed & keep  # [B, 1, T_q, T_k]

        if self.record_probs:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # [B, H, T_q, T_k]
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            probs = self.attention_probe(scores.softmax(dim=-1))  # [B, H, T_q, T_k]
            filler = probs @ v  # [B, H, T_q, d_k]
        else:
            filler = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # [B, H, T_q, d_k]
        return self._bind_heads(filler, x)

    def _bind_heads(self, filler: Tensor, x: Tensor) -> Tensor:
        """filler: [B, H, T_q, d_k] attention results; x: [B, T_q, D] the query-side input. Returns [B, T_q, D]."""
        batch, length, _ = x.shape
        bound = self.binding(filler, x)  # [B, H, T_q, d_out]
        bound = bound.transpose(1, 2).reshape(batch, length, -1)  # [B, T_q, H*d_out]
        return self.out_proj(bound)  # [B, T_q, D]
