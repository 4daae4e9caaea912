"""The TP-N2F natural-language encoder (Chen et al., Sec. 3.2.1 and Appendix A.2.1, Eqs. 7-8, 13-29).

Each word w^t is bound as T^t = f^t ⊗ r^t, with the filler f^t = F a_F^t and the role
r^t = R a_R^t soft-selected from learned dictionaries F [d_F, n_F] and R [d_R, n_R] by
a = softmax(W h / T) at temperature T (`selection_temperature`, 0.1). h comes from two
LSTM cells, the Filler-LSTM and the Role-LSTM, of width d_T = d_F * d_R whose hidden
state fed to step t+1 is not their own h but the flattened binding T^t (Eq. 13: V ♭(T^{t-1}));
each keeps its own cell state. T^t is flattened in [d_F, d_R] order (f ⊗ r = f r^T, Eq. 8;
Eq. 29 writes r ⊗ f, which only transposes the same matrix).

Padding: at a pad position both LSTMs keep their state, T^t = 0 and the selection weights
are 0, so T_S = sum_t T^t and the final states ignore padding wherever it is.
Not stated in the paper, our choices: W_fa and W_ra have a bias; F and R are initialised
like nn.Linear(n, d) weights (uniform in +-1/sqrt(n)). Under `variant: authors_code` the
dictionaries are affine, f = F a + b_F (the authors' code: nn.Linear(n_F, d_F)).

Probes (for tprepro.models.probes.capture), one call per encoding:
  filler_probe  [B, S, n_F]      filler selection weights a_F
  role_probe    [B, S, n_R]      role selection weights a_R
  binding_probe [B, S, d_F, d_R] the bindings T^t
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from tprepro.errors import TpreproError
from tprepro.models.config import ModelConfig


class EncoderOutput(NamedTuple):
    """What a tuple decoder needs from an encoder."""

    memory: Tensor  # [B, S, d_memory], zero at padding: what the decoder attends over
    pad_mask: Tensor  # [B, S] True at padding
    summary: Tensor  # [B, d_summary]: T_S (TPR encoder) or the last real hidden state (LSTM encoder)
    final_state: tuple[Tensor, Tensor] | None  # LSTM encoder: (h, c) at the last real position, [B, H]


class SoftSelection(nn.Module):
    """a = softmax(W h / T); returns (dictionary @ a (+ bias), a): one of Eqs. 19-20 (fillers) or 27-28
    (roles). `bias`: the dictionary is affine, as nn.Linear(n_items, d_item) (the authors' code)."""

    def __init__(self, d_hidden: int, n_items: int, d_item: int, temperature: float, bias: bool = False):
        super().__init__()
        self.temperature = temperature
        self.scores = nn.Linear(d_hidden, n_items)  # W_fa or W_ra
        bound = 1.0 / math.sqrt(n_items)
        self.dictionary = nn.Parameter(torch.empty(d_item, n_items).uniform_(-bound, bound))  # F or R
        self.dictionary_bias = nn.Parameter(torch.empty(d_item).uniform_(-bound, bound)) if bias else None

    def forward(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """hidden: [B, d_hidden]. Returns (vector [B, d_item], weights [B, n_items])."""
        weights = torch.softmax(self.scores(hidden) / self.temperature, dim=-1)  # [B, n]
        vector = weights @ self.dictionary.t()  # [B, d_item]
        return (vector if self.dictionary_bias is None else vector + self.dictionary_bias), weights


class TPREncoder(nn.Module):
    """Words -> per-word TPRs T^t (memory) and their sum T_S (summary)."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__()
        self.pad_id = pad_id
        n2f = cfg.family  # models/n2f.py N2FConfig
        self.d_filler, self.d_role = n2f.d_filler, cfg.d_role
        self.d_binding = n2f.d_filler * cfg.d_role  # d_T
        self.embedding = nn.Embedding(vocab_size, cfg.d_model)  # w^t
        self.dropout = nn.Dropout(cfg.dropout)
        self.filler_lstm = nn.LSTMCell(cfg.d_model, self.d_binding)  # Eqs. 13-18
        self.role_lstm = nn.LSTMCell(cfg.d_model, self.d_binding)  # Eqs. 21-26
        affine = n2f.variant == "authors_code"
        self.filler_selection = SoftSelection(self.d_binding, n2f.n_fillers, n2f.d_filler, n2f.selection_temperature,
                                              bias=affine)
        self.role_selection = SoftSelection(self.d_binding, cfg.n_roles, cfg.d_role, n2f.selection_temperature,
                                            bias=affine)
        self.filler_probe = nn.Identity()  # [B, S, n_F]
        self.role_probe = nn.Identity()  # [B, S, n_R]
        self.binding_probe = nn.Identity()  # [B, S, d_F, d_R]

    @property
    def d_memory(self) -> int:
        return self.d_binding

    @property
    def d_summary(self) -> int:
        return self.d_binding

    def forward(self, src: Tensor) -> EncoderOutput:
        """src: [B, S] word ids."""
        pad_mask = src == self.pad_id  # [B, S]
        words = self.dropout(self.embedding(src))  # [B, S, d]
        batch, length = src.shape
        if length == 0:
            raise TpreproError("model input: empty source batch (S = 0)")
        binding = words.new_zeros(batch, self.d_binding)  # ♭(T^{t-1}) [B, d_T]
        filler_cell = words.new_zeros(batch, self.d_binding)  # c_F [B, d_T]
        role_cell = words.new_zeros(batch, self.d_binding)  # c_R [B, d_T]
        bindings, filler_weights, role_weights = [], [], []
        for t in range(length):
            h_filler, c_filler = self.filler_lstm(words[:, t], (binding, filler_cell))  # [B, d_T]
            h_role, c_role = self.role_lstm(words[:, t], (binding, role_cell))  # [B, d_T]
            filler, a_filler = self.filler_selection(h_filler)  # [B, d_F], [B, n_F]
            role, a_role = self.role_selection(h_role)  # [B, d_R], [B, n_R]
            bound = (filler[:, :, None] * role[:, None, :]).flatten(1)  # f ⊗ r, [B, d_T]
            real = ~pad_mask[:, t, None]  # [B, 1]
            binding = torch.where(real, bound, binding)
            filler_cell = torch.where(real, c_filler, filler_cell)
            role_cell = torch.where(real, c_role, role_cell)
            bindings.append(bound * real)
            filler_weights.append(a_filler * real)
            role_weights.append(a_role * real)
        self.filler_probe(torch.stack(filler_weights, dim=1))  # [B, S, n_F]
        self.role_probe(torch.stack(role_weights, dim=1))  # [B, S, n_R]
        memory = torch.stack(bindings, dim=1)  # [B, S, d_T]
        memory = self.binding_probe(memory.unflatten(-1, (self.d_filler, self.d_role))).flatten(2)  # [B, S, d_T]
        return EncoderOutput(memory, pad_mask, memory.sum(dim=1), None)  # T_S: [B, d_T]
