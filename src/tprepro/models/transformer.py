"""Encoder-decoder (TP-)Transformer of Schlag et al., Eq. 1, 2, 7, 8.

The Transformer and the TP-Transformer are this one class: the config's
`binding` and `role_embedding` are the only differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from tprepro.errors import TpreproError
from tprepro.models.attention import AttentionMask, KVCache, MultiHeadAttention, document_mask
from tprepro.models.config import PAPER_SIZES, TINY_SIZES, ModelConfig
from tprepro.models.initialisation import initialise
from tprepro.models.registry import register_arch, register_preset

if TYPE_CHECKING:  # annotations only: a stage that builds models need not import the batch stream
    from tprepro.data.batching import Segments


def sinusoid_table(n_positions: int, d_model: int) -> Tensor:
    """p_t of Vaswani et al.: p[t, 2i] = sin(t / 10000^(2i/d)), p[t, 2i+1] = cos(same)."""
    position = torch.arange(n_positions, dtype=torch.float32)[:, None]  # [P, 1]
    frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # [ceil(D/2)]
    angle = position * frequency  # [P, ceil(D/2)]
    table = torch.zeros(n_positions, d_model)  # [P, D]
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return table


class InputEmbedding(nn.Module):
    """Eq. 2: e_t = E x_t sqrt(d_z) + p_t; with a role embedding z_0 = e_t ⊙ (W^(p) e_t + b^(p)).

    Under `init: authors` b^(p) starts at PyTorch's default + 1 (their r = W^(p) e + b + 1)."""

    def __init__(self, vocab_size: int, d_model: int, max_positions: int, role_embedding: bool):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_model)  # E, shared by encoder, decoder and output (Eq. 8)
        self.role = nn.Linear(d_model, d_model) if role_embedding else None  # W^(p), b^(p)
        self.register_buffer("positions", sinusoid_table(max_positions, d_model), persistent=False)  # [P, D]
        self.scale = math.sqrt(d_model)

    def forward(self, x: Tensor, offset: int = 0, positions: Tensor | None = None) -> Tensor:
        """x: [B, T] token ids at positions offset .. offset+T-1, or at `positions` [B, T] (packed rows:
        each problem counts from 0). Returns [B, T, D]."""
        end = offset + x.size(1)
        if end > self.positions.size(0):
            raise TpreproError(f"model.max_positions: sequence of length {end} exceeds {self.positions.size(0)}")
        p = self.positions[offset:end] if positions is None else self.positions[positions]  # [T, D] or [B, T, D]
        e = self.tokens(x) * self.scale + p  # [B, T, D]
        return e if self.role is None else e * self.role(e)  # [B, T, D]


class FeedForward(nn.Module):
    """Eq. 7: FF(x) = W^(g) ReLU(W^(f) x + b^(f)) + b^(g)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.expand = nn.Linear(d_model, d_ff)  # W^(f), b^(f)
        self.contract = nn.Linear(d_ff, d_model)  # W^(g), b^(g)

    def forward(self, x: Tensor) -> Tensor:
        return self.contract(torch.relu(self.expand(x)))  # [B, T, D]


def attention(cfg: ModelConfig) -> MultiHeadAttention:
    """One attention sub-layer with the config's binding and its options."""
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.binding, n_roles=cfg.n_roles, d_role=cfg.d_role)


class EncoderLayer(nn.Module):
    """Eq. 1: h = z + TPMHA(LN(z), LN(z)); z' = LN(h + FF(LN(h))).

    `bind_residual` applies a binding that acts on h (TPT-d); for the others it is the identity.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = nn.LayerNorm(cfg.d_model)
        self.self_attn = attention(cfg)
        self.ff_norm = nn.LayerNorm(cfg.d_model)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff)
        self.out_norm = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, z: Tensor, pad_mask: Tensor | None, attn_mask: AttentionMask | None = None) -> Tensor:
        """z: [B, S, D]; pad_mask: [B, S] True at padding, or (packed rows) `attn_mask` from
        attention.document_mask. Returns [B, S, D]."""
        attended = self.self_attn(self.attn_norm(z), key_padding_mask=pad_mask, attn_mask=attn_mask)  # [B, S, D]
        h = z + self.dropout(attended)  # [B, S, D]
        h = self.self_attn.bind_residual(h)  # [B, S, D]
        return self.out_norm(h + self.dropout(self.ff(self.ff_norm(h))))  # [B, S, D]


class DecoderLayer(nn.Module):
    """The decoder cell: Eq. 1's pattern with a cross-attention sub-layer inserted (Sec. 2.3).

        h1 = z  + TPMHA_self(LN_1(z), LN_1(z_{1:t}))      causal
        h2 = h1 + TPMHA_cross(LN_2(h1), m_{1:S})          m: final encoder states
        z' = LN_4(h2 + FF(LN_3(h2)))

    As in Eq. 1, every sub-layer reads a layer-normalised input, adds its output to
    the un-normalised residual stream, and one LN closes the cell. The encoder memory
    is used as is: every encoder cell already ends with an LN. A binding acting after
    the residual (TPT-d, Eq. 8 of the summarization paper) maps h1 and h2.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_norm = nn.LayerNorm(cfg.d_model)
        self.self_attn = attention(cfg)
        self.cross_norm = nn.LayerNorm(cfg.d_model)
        self.cross_attn = attention(cfg)
        self.ff_norm = nn.LayerNorm(cfg.d_model)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff)
        self.out_norm = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(
        self,
        z: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        self_cache: KVCache | None = None,
        cross_cache: KVCache | None = None,
        self_mask: AttentionMask | None = None,
        cross_mask: AttentionMask | None = None,
    ) -> Tensor:
        """z: [B, T, D]; memory: [B, S, D]; src_mask: [B, S] True at padding, or (packed rows)
        `self_mask` and `cross_mask` from attention.document_mask. Returns [B, T, D]."""
        attended = self.self_attn(self.self_norm(z), causal=True, cache=self_cache, attn_mask=self_mask)  # [B, T, D]
        h = self.self_attn.bind_residual(z + self.dropout(attended))  # [B, T, D]
        cross = self.cross_attn(self.cross_norm(h), memory, key_padding_mask=src_mask, cache=cross_cache,
                                attn_mask=cross_mask)  # [B, T, D]
        h = self.cross_attn.bind_residual(h + self.dropout(cross))  # [B, T, D]
        return self.out_norm(h + self.dropout(self.ff(self.ff_norm(h))))  # [B, T, D]


@dataclass
class DecoderCache:
    """Per decoder layer K/V caches for incremental decoding (model.new_cache())."""

    self_attn: list[KVCache]  # grows by one position per decoding step
    cross_attn: list[KVCache]  # projected encoder memory, computed on the first step

    @property
    def length(self) -> int:
        """Target positions already decoded."""
        return self.self_attn[0].length


ATTENTION_SETTINGS = ("n_heads", "d_ff", "binding", "role_embedding", "max_positions")


@register_arch("transformer", settings=(*ATTENTION_SETTINGS, "n_encoder_layers", "n_decoder_layers"))
@register_arch("tp_transformer", settings=(*ATTENTION_SETTINGS, "n_encoder_layers", "n_decoder_layers"))
class TransformerModel(nn.Module):
    """Encoder-decoder with shared, tied symbol embedding E (Eq. 2, 8)."""

    supports_cache = True  # greedy_decode may feed one token at a time through new_cache()
    supports_packing = True  # forward takes packed rows (data/packing.py, train.packing)

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__()
        self.cfg = cfg
        self.pad_id = pad_id
        self.embedding = InputEmbedding(vocab_size, cfg.d_model, cfg.max_positions, cfg.role_embedding)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        initialise(self, self.embedding.tokens, self.embedding.role, cfg.init)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src: [B, S] token ids. Returns (memory [B, S, D], src_mask [B, S] True at padding)."""
        src_mask = src == self.pad_id  # [B, S]
        z = self.dropout(self.embedding(src))  # [B, S, D]
        for layer in self.encoder:
            z = layer(z, src_mask)  # [B, S, D]
        return z, src_mask

    def new_cache(self) -> DecoderCache:
        return DecoderCache([KVCache() for _ in self.decoder], [KVCache() for _ in self.decoder])

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None) -> Tensor:
        """tgt_in: [B, T] decoder input (with `cache`: only the positions after cache.length).
        Returns logits [B, T, V] (Eq. 8: z E^T)."""
        offset = 0 if cache is None else cache.length
        z = self.dropout(self.embedding(tgt_in, offset))  # [B, T, D]
        caches = zip(cache.self_attn, cache.cross_attn) if cache is not None else [(None, None)] * len(self.decoder)
        for layer, (self_cache, cross_cache) in zip(self.decoder, caches):
            z = layer(z, memory, src_mask, self_cache, cross_cache)  # [B, T, D]
        return z @ self.embedding.tokens.weight.t()  # [B, T, V]

    def forward(self, src: Tensor, tgt_in: Tensor, segments: Segments | None = None) -> Tensor:
        """Teacher forcing. src: [B, S]; tgt_in: [B, T] (right-padded). Returns logits [B, T, V].

        Target padding needs no mask: with right padding the causal mask already keeps
        every real position from seeing a pad, and the loss ignores pad positions.
        With `segments` the rows are packed (data/packing.py): each position attends only within its
        problem and takes its position within it."""
        if segments is not None:
            return self._forward_packed(src, tgt_in, segments)
        memory, src_mask = self.encode(src)  # [B, S, D], [B, S]
        return self.decode(tgt_in, memory, src_mask)  # [B, T, V]

    def _forward_packed(self, src: Tensor, tgt_in: Tensor, seg: Segments) -> Tensor:
        """src: [R, S]; tgt_in: [R, T] packed rows. Returns logits [R, T, V]."""
        encoder_mask = document_mask(seg.src_docs, seg.src_docs)
        self_mask = document_mask(seg.tgt_docs, seg.tgt_docs, causal=True)
        cross_mask = document_mask(seg.tgt_docs, seg.src_docs)
        z = self.dropout(self.embedding(src, positions=seg.src_positions))  # [R, S, D]
        for layer in self.encoder:
            z = layer(z, None, encoder_mask)  # [R, S, D]
        memory = z
        z = self.dropout(self.embedding(tgt_in, positions=seg.tgt_positions))  # [R, T, D]
        for layer in self.decoder:
            z = layer(z, memory, None, self_mask=self_mask, cross_mask=cross_mask)  # [R, T, D]
        return z @ self.embedding.tokens.weight.t()  # [R, T, V]


# ---- presets: Schlag et al. Sec. 4.1 and the variants -----------------------------------------------
_TRANSFORMER = dict(arch="transformer", binding="identity", role_embedding=False)
_TP_TRANSFORMER = dict(arch="tp_transformer", binding="continuous_role", role_embedding=True)

register_preset("transformer_paper", **PAPER_SIZES, **_TRANSFORMER)
register_preset("tp_transformer_paper", **PAPER_SIZES, **_TP_TRANSFORMER)
register_preset("transformer_tiny", **TINY_SIZES, **_TRANSFORMER)
register_preset("tp_transformer_tiny", **TINY_SIZES, **_TP_TRANSFORMER)

# ---- the variants of issue 3 -------------------------------------------------------------------
# TPT-d (summarization paper, Sec. 3.2): N_r = 50 role embeddings of width d_r = 64 = d_model / H per
# attention sub-layer, bound after the residual; no role-scaled input embedding (the paper has none).
_TPT_D = dict(arch="tp_transformer", binding="discrete_role", role_embedding=False, n_roles=50)
register_preset("tpt_d_paper", **PAPER_SIZES, **_TPT_D, d_role=64)
register_preset("tpt_d_tiny", **TINY_SIZES, **_TPT_D, d_role=16)
# Full tensor product v̄ ⊗ r (appendix A): d_k * d_r values per head; tiny only (at paper size W^(o)
# alone would hold 8 * 64 * 64 * 512 weights per attention).
register_preset("full_tensor_tiny", **TINY_SIZES, arch="tp_transformer", binding="full_tensor", role_embedding=True,
                d_role=4)

# ---- the summarization experiment (issue 13; Jiang et al. 2021, Sec. 3.2) ----------------------------------
# Transformer, TPT-c (Schlag et al.'s continuous roles) and TPT-d (N_r = 50 discrete roles of d_r = 64):
# 6 + 6 layers, 8 heads, d_k = 64, d_m = 512, d_f = 2048, dropout 0.1. Tiny: CPU minutes.
_SUMMARY_PAPER = dict(PAPER_SIZES, dropout=0.1)
_SUMMARY_TINY = dict(TINY_SIZES, dropout=0.1)
for _size, _base, _d_role in (("paper", _SUMMARY_PAPER, 64), ("tiny", _SUMMARY_TINY, 16)):
    register_preset(f"summarization_transformer_{_size}", **_base, **_TRANSFORMER)
    register_preset(f"summarization_tpt_c_{_size}", **_base, **_TP_TRANSFORMER)
    register_preset(f"summarization_tpt_d_{_size}", **_base, **_TPT_D, d_role=_d_role)
