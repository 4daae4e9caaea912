"""Universal Transformer (Dehghani et al.) and its adaptive version with ACT, as used by Wangperawong.

One shared encoder cell and one shared decoder cell (transformer.EncoderLayer /
DecoderLayer, so any binding works) are applied repeatedly. Before each application n the
coordinate signal P^n = p_pos + p_step(n) is added: the sinusoids of the position and of
the step (1-based), from the same table as the input positions.
- `universal_transformer`: T = `ut_steps` applications; decodes with a K/V cache per step.
- `adaptive_universal_transformer`: per-position ACT (act.py) decides the number of
  applications, up to `act_max_steps`, separately in encoder and decoder. The mean ponder
  cost over real positions of encoder plus decoder, times `ponder_weight`, is returned by
  `auxiliary_loss()` and added to the training loss. The step a decoder position needs
  depends on frozen states of earlier positions, so it decodes without a cache.
`n_encoder_layers` / `n_decoder_layers` are not used: the depth is the number of steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from tprepro.errors import TpreproError
from tprepro.models.act import AdaptiveComputation, StepFn
from tprepro.models.attention import KVCache
from tprepro.models.config import NO_BINDING, TINY_SIZES, Init, ModelConfig, check_positive
from tprepro.models.registry import register_arch, register_preset
from tprepro.models.initialisation import initialise
from tprepro.models.transformer import (ATTENTION_SETTINGS, DecoderCache, DecoderLayer, EncoderLayer, InputEmbedding,
                                        sinusoid_table)


@dataclass
class UniversalConfig:
    """The universal_transformer's own settings (cfg.family)."""

    ut_steps: int = 6  # T: applications of the shared encoder and decoder block

    def validate(self, where: str) -> None:
        check_positive(self, where, "ut_steps")


@dataclass
class AdaptiveConfig:
    """The adaptive_universal_transformer's own settings (cfg.family): ACT (act.py)."""

    act_max_steps: int = 24  # most updates per position (Wangperawong: 24)
    act_epsilon: float = 0.01  # a position halts once its halting probabilities reach 1 - epsilon
    ponder_weight: float = 0.01  # tau: weight of the mean ponder cost N(t) + R(t) added to the loss

    def validate(self, where: str) -> None:
        check_positive(self, where, "act_max_steps")
        if not 0.0 < self.act_epsilon < 1.0:
            raise TpreproError(f"{where}.act_epsilon: must be in (0, 1), got {self.act_epsilon}")
        if self.ponder_weight < 0:
            raise TpreproError(f"{where}.ponder_weight: must be >= 0, got {self.ponder_weight}")


@register_arch("universal_transformer", settings=ATTENTION_SETTINGS, family=UniversalConfig)
class UniversalTransformer(nn.Module):
    """Shared-weight encoder and decoder cells applied `ut_steps` times, with tied embedding E."""

    supports_cache = True

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__()
        self.cfg = cfg
        self.pad_id = pad_id
        self.embedding = InputEmbedding(vocab_size, cfg.d_model, cfg.max_positions, cfg.role_embedding)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder_block = EncoderLayer(cfg)  # the one encoder cell, applied at every step
        self.decoder_block = DecoderLayer(cfg)  # the one decoder cell
        rows = max(cfg.max_positions, self.max_steps + 1)
        self.register_buffer("timing", sinusoid_table(rows, cfg.d_model), persistent=False)  # [P, D]
        initialise(self, self.embedding.tokens, self.embedding.role, cfg.init)

    @property
    def max_steps(self) -> int:
        return self.cfg.family.ut_steps

    def coordinates(self, n: int, offset: int, length: int) -> Tensor:
        """P^n for positions offset .. offset+length-1 at step n (0-based): [T, D]."""
        return self.timing[offset : offset + length] + self.timing[n + 1]

    def recur(self, state: Tensor, active: Tensor, step: StepFn, side: str) -> Tensor:
        """Apply `step` ut_steps times. state [B, T, D] -> [B, T, D]."""
        for n in range(self.max_steps):
            state = step(state, n)
        return state

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src: [B, S]. Returns (memory [B, S, D], src_mask [B, S] True at padding)."""
        src_mask = src == self.pad_id  # [B, S]
        z = self.dropout(self.embedding(src))  # [B, S, D]
        length = src.size(1)

        def step(state: Tensor, n: int) -> Tensor:
            return self.encoder_block(state + self.coordinates(n, 0, length), src_mask)  # [B, S, D]

        return self.recur(z, ~src_mask, step, "encoder"), src_mask

    def new_cache(self) -> DecoderCache:
        """One self- and one cross-attention cache per step (the cell is shared, its inputs are not)."""
        steps = range(self.max_steps)
        return DecoderCache([KVCache() for _ in steps], [KVCache() for _ in steps])

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None) -> Tensor:
        """tgt_in: [B, T] (with `cache`: only the positions after cache.length). Returns logits [B, T, V]."""
        offset = 0 if cache is None else cache.length
        z = self.dropout(self.embedding(tgt_in, offset))  # [B, T, D]
        length = tgt_in.size(1)

        def step(state: Tensor, n: int) -> Tensor:
            self_cache = cross_cache = None
            if cache is not None:
                self_cache, cross_cache = cache.self_attn[n], cache.cross_attn[n]
            z_n = state + self.coordinates(n, offset, length)  # [B, T, D]
            return self.decoder_block(z_n, memory, src_mask, self_cache, cross_cache)  # [B, T, D]

        z = self.recur(z, tgt_in != self.pad_id, step, "decoder")  # [B, T, D]
        return z @ self.embedding.tokens.weight.t()  # [B, T, V]

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing. src: [B, S]; tgt_in: [B, T]. Returns logits [B, T, V]."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)


@register_arch("adaptive_universal_transformer", settings=ATTENTION_SETTINGS, family=AdaptiveConfig)
class AdaptiveUniversalTransformer(UniversalTransformer):
    """The Universal Transformer with per-position ACT in encoder and decoder."""

    supports_cache = False

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__(cfg, vocab_size, pad_id)
        act = cfg.family
        self.encoder_act = AdaptiveComputation(cfg.d_model, act.act_max_steps, act.act_epsilon)
        self.decoder_act = AdaptiveComputation(cfg.d_model, act.act_max_steps, act.act_epsilon)
        if cfg.init != Init.PYTORCH:  # the halting unit is in neither paper nor the authors' code
            for act in (self.encoder_act, self.decoder_act):
                nn.init.xavier_uniform_(act.halt.weight)
                nn.init.zeros_(act.halt.bias)
        self.ponder: dict[str, Tensor] = {}  # mean ponder cost of the last encode / decode

    @property
    def max_steps(self) -> int:
        return self.cfg.family.act_max_steps

    def recur(self, state: Tensor, active: Tensor, step: StepFn, side: str) -> Tensor:
        act = self.encoder_act if side == "encoder" else self.decoder_act
        output, ponder, _ = act(state, active, step)  # [B, T, D], [B, T]
        self.ponder[side] = ponder.sum() / active.sum().clamp(min=1)  # mean over real positions
        return output

    def new_cache(self) -> DecoderCache:
        raise NotImplementedError("adaptive_universal_transformer decodes without a cache (supports_cache)")

    def auxiliary_loss(self) -> Tensor:
        """tau * (mean ponder cost of the encoder + of the decoder) of the last forward, with its gradient."""
        return self.cfg.family.ponder_weight * (self.ponder["encoder"] + self.ponder["decoder"])


# ---- presets: Wangperawong (2018) and tiny UT / AUT --------------------------------------------------
# Wangperawong (2019): 2 encoder and 2 decoder layers, 4 heads, feed-forward 128, dropout 0.1. The paper
# states no d_model beyond "smaller" than the base model; 128 is tensor2tensor's tiny hidden size
# (a feed-forward of 128 presumes d_model <= 128). For the UT, "2 layers" are 2 recurrent steps; the AUT
# caps N(t) at 24 as the paper does. The paper states no initialisation; tensor2tensor, which it used,
# draws the embedding N(0, 1/d) and scales it by sqrt(d), as `init: authors` does.
_WANGPERAWONG = dict(d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128, dropout=0.1,
                     init="authors", binding="identity", role_embedding=False)
register_preset("wangperawong_transformer", **_WANGPERAWONG, arch="transformer")
register_preset("wangperawong_ut", **_WANGPERAWONG, arch="universal_transformer", ut_steps=2)
register_preset("wangperawong_aut", **_WANGPERAWONG, arch="adaptive_universal_transformer", act_max_steps=24,
                act_epsilon=0.01)
register_preset("ut_tiny", **TINY_SIZES, **NO_BINDING, arch="universal_transformer", ut_steps=2)
register_preset("aut_tiny", **TINY_SIZES, **NO_BINDING, arch="adaptive_universal_transformer", act_max_steps=4)
