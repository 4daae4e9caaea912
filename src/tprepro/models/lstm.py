"""LSTM encoder-decoder with attention: the recurrent baseline of Table 1 (Saxton et al., 2019).

Saxton et al.'s "Simple LSTM" (Table 1: 18M weights, 57% interpolation, 41% extrapolation)
is a single LSTM of 2048 units that reads the question one character at a time, then takes
a fixed number of extra "thinking" steps and then emits the answer; it has no attention.
Their "Attentional LSTM" adds an encoder and attention over it. The issue asks for a
seq2seq LSTM with attention, so this arch is the latter kind, under the model API every
stage uses (forward, encode, decode, new_cache):
- encoder: `lstm_layers` LSTM layers of `lstm_hidden` units over the embedded question;
- decoder: an LSTM of the same shape over the embedded answer prefix, started from the
  encoder's last output (hidden state of every layer; cell state zero);
- attention (Luong et al., "general"): a_t = softmax(h_t^T W_a m_s) over real source
  positions, context c_t = sum_s a_ts m_s, output tanh(W_c [c_t; h_t]) -> W_y -> logits.
The symbol embedding (width d_model) is shared by encoder and decoder inputs. The preset
`saxton_simple_lstm` is sized to Saxton's 18M-weight budget, not to the Simple LSTM's
shape. Saxton et al. state no initialisation, so only `init: pytorch` is accepted.
`binding`, `role_embedding`, `n_heads` and `d_ff` do not apply to this arch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tprepro.errors import TpreproError
from tprepro.models.config import NO_BINDING, ModelConfig, check_positive
from tprepro.models.registry import register_arch, register_preset


@dataclass
class LSTMCache:
    """The decoder LSTM's (h, c) after the positions decoded so far."""

    state: tuple[Tensor, Tensor] | None = None  # ([L, B, H], [L, B, H])
    length: int = 0


@dataclass
class LSTMConfig:
    """The lstm arch's own settings (cfg.family)."""

    lstm_hidden: int = 2048  # hidden units of the encoder and decoder LSTMs
    lstm_layers: int = 1  # stacked LSTM layers in encoder and decoder

    def validate(self, where: str) -> None:
        check_positive(self, where, "lstm_hidden", "lstm_layers")


@register_arch("lstm", family=LSTMConfig)
class LSTMSeq2Seq(nn.Module):
    supports_cache = True

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__()
        if cfg.init != "pytorch":
            raise TpreproError(f"model.init: arch lstm supports only 'pytorch' (got {cfg.init!r}): "
                               "Saxton et al. state no initialisation")
        self.cfg = cfg
        self.pad_id = pad_id
        hidden, layers = cfg.family.lstm_hidden, cfg.family.lstm_layers
        between = cfg.dropout if layers > 1 else 0.0
        self.embedding = nn.Embedding(vocab_size, cfg.d_model)
        self.encoder = nn.LSTM(cfg.d_model, hidden, layers, batch_first=True, dropout=between)
        self.decoder = nn.LSTM(cfg.d_model, hidden, layers, batch_first=True, dropout=between)
        self.score = nn.Linear(hidden, hidden, bias=False)  # W_a
        self.combine = nn.Linear(2 * hidden, hidden)  # W_c
        self.output = nn.Linear(hidden, vocab_size)  # W_y
        self.dropout = nn.Dropout(cfg.dropout)
        self.attention_probe = nn.Identity()  # hook point for the attention weights, [B, T, S]

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src: [B, S]. Returns (memory [B, S, H], zero at padding; src_mask [B, S] True at padding)."""
        src_mask = src == self.pad_id  # [B, S]
        lengths = (~src_mask).sum(dim=1).clamp(min=1).cpu()  # [B]
        packed = pack_padded_sequence(self.dropout(self.embedding(src)), lengths, batch_first=True,
                                      enforce_sorted=False)
        memory, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=src.size(1))
        return memory, src_mask  # [B, S, H]

    def initial_state(self, memory: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """Every decoder layer starts from the encoder's output at the last real position; c = 0."""
        last = (~src_mask).sum(dim=1).clamp(min=1) - 1  # [B]
        h = memory[torch.arange(memory.size(0), device=memory.device), last]  # [B, H]
        h = h[None].expand(self.cfg.family.lstm_layers, -1, -1).contiguous()  # [L, B, H]
        return h, torch.zeros_like(h)

    def new_cache(self) -> LSTMCache:
        return LSTMCache()

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: LSTMCache | None = None) -> Tensor:
        """tgt_in: [B, T] (with `cache`: only the positions after cache.length). Returns logits [B, T, V]."""
        state = cache.state if cache is not None and cache.state is not None else self.initial_state(memory, src_mask)
        hidden, state = self.decoder(self.dropout(self.embedding(tgt_in)), state)  # [B, T, H]
        if cache is not None:
            cache.state, cache.length = state, cache.length + tgt_in.size(1)
        scores = hidden @ self.score(memory).transpose(1, 2)  # [B, T, S]
        scores = scores.masked_fill(src_mask[:, None, :], float("-inf"))
        weights = self.attention_probe(scores.softmax(dim=-1))  # [B, T, S]
        context = weights @ memory  # [B, T, H]
        combined = torch.tanh(self.combine(torch.cat([context, hidden], dim=-1)))  # [B, T, H]
        return self.output(self.dropout(combined))  # [B, T, V]

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing. src: [B, S]; tgt_in: [B, T]. Returns logits [B, T, V]."""
        memory, src_mask = self.encode(src)
        return self.decode(tgt_in, memory, src_mask)


# ---- presets ------------------------------------------------------------------------------------------
# LSTM encoder-decoder with attention (lstm.py). saxton_simple_lstm matches the 18M weights of Saxton et
# al.'s Simple LSTM (Table 1) with 72 symbols, not its shape: see lstm.py.
_LSTM = dict(arch="lstm", init="pytorch", dropout=0.0, **NO_BINDING)
register_preset("saxton_simple_lstm", **_LSTM, d_model=768, lstm_hidden=1024, lstm_layers=1)
register_preset("lstm_tiny", **_LSTM, d_model=64, lstm_hidden=128, lstm_layers=1)
