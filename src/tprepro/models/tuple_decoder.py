"""Relational-tuple decoders: the TP-N2F decoder (Sec. 3.2.2, Appendix A.2.3, Eqs. 9-11, 31-52)
and the attentional LSTM tuple decoder of the seq2prog baseline.

Both are one `TupleDecoder`: an LSTM cell over the embedded previous tuple, Luong
attention over the encoder memory, and a readout of the attentional hidden state:
- input (Eq. 31): concat of the relation embedding and the K argument embeddings of the
  previous tuple (each `d_tuple_embedding` wide);
- recurrence (Eqs. 32-37): the hidden state fed to the next step is the attentional
  output H^{t-1}, not the LSTM's own h (Eq. 32: V ♭(H^{t-1})); the cell state is its own;
- attention (Eqs. 38-41): the memory vectors (T_t, d_T wide, for the TPR encoder) are
  projected to the decoder width d by a learned matrix (the paper's C_T ∈ R^{d_H x n}
  implies such a projection since d_T != d_H in its settings), scores are dot products
  of h_input with the projected memory, the context s is the weighted sum of projected
  memory, and H = tanh(K [h_input; s]) with K: 2d -> d. Eq. 41 writes no tanh; we keep
  Luong et al.'s tanh (the paper cites their attention), which also keeps the fed-back H bounded;
  `authors_code` (the authors' src/model.py): Luong's "general" score h W_a k, and a bias on the
  memory projection;
- readout: `UnbindingReadout` (TP-N2F, Eqs. 42-49) or `LinearReadout` (baseline: one
  linear head for the relation and one per argument slot).

Probes: `attention_probe` [B, T, S] (one call per `run`); the unbinding's `relation_probe`
(r'_rel, [..., d_Rel]) and `argument_probe` (a_i, [..., K, d_Arg]), one call per readout.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class LuongAttention(nn.Module):
    """Dot-product attention over projected memory, then H = tanh(K [h; s]) (Eqs. 39-41).
    `general_score`: scores k . (W_a h) (Luong's "general"); `memory_bias`: the projection is affine."""

    def __init__(self, d_query: int, d_memory: int, general_score: bool = False, memory_bias: bool = False):
        super().__init__()
        self.memory_projection = nn.Linear(d_memory, d_query, bias=memory_bias)  # d_memory -> d (C_T)
        self.query_projection = nn.Linear(d_query, d_query, bias=False) if general_score else None  # W_a
        self.combine = nn.Linear(2 * d_query, d_query, bias=False)  # K

    def keys(self, memory: Tensor) -> Tensor:
        """memory: [B, S, d_memory] -> projected memory [B, S, d] (computed once per source)."""
        return self.memory_projection(memory)

    def forward(self, query: Tensor, keys: Tensor, pad_mask: Tensor) -> tuple[Tensor, Tensor]:
        """query: [B, d]; keys: [B, S, d]; pad_mask: [B, S]. Returns (H [B, d], weights [B, S])."""
        scorer = query if self.query_projection is None else self.query_projection(query)  # [B, d]
        scores = (keys @ scorer[:, :, None]).squeeze(-1)  # d^t (Eq. 39), [B, S]
        scores = scores.masked_fill(pad_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B, S]
        context = (weights[:, None, :] @ keys).squeeze(1)  # s^t (Eq. 40), [B, d]
        return torch.tanh(self.combine(torch.cat([query, context], dim=-1))), weights  # Eq. 41


class TupleUnbinding(nn.Module):
    """Two-step TPR unbinding of H ≈ sum_i a_i ⊗ r_rel ⊗ p_i (Eqs. 42-46).

    H (d_H = d_Arg * d_Rel * d_Pos) is read as a [d_Arg, d_Rel, d_Pos] tensor;
    B_i = H · p'_i ([d_Arg, d_Rel]) with K learned positional unbinding vectors p'_i;
    r'_rel = W_dual ♭(sum_i B_i) + b, a linear map d_Arg * d_Rel -> d_Rel (the paper's
    "W_dual ∈ R^{d_H}" cannot produce a d_Rel vector from a d_Arg x d_Rel matrix);
    a_i = B_i r'_rel ([d_Arg]).
    """

    def __init__(self, d_argument: int, d_relation: int, d_position: int, arity: int):
        super().__init__()
        self.shape = (d_argument, d_relation, d_position)
        self.position_duals = nn.Parameter(torch.randn(arity, d_position) / math.sqrt(d_position))  # p'_i
        self.relation_dual = nn.Linear(d_argument * d_relation, d_relation)  # W_dual
        self.relation_probe = nn.Identity()  # r'_rel [..., d_Rel]
        self.argument_probe = nn.Identity()  # a_i [..., K, d_Arg]

    def forward(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """hidden: [..., d_H]. Returns (r'_rel [..., d_Rel], arguments [..., K, d_Arg])."""
        tensor = hidden.unflatten(-1, self.shape)  # H: [..., d_Arg, d_Rel, d_Pos]
        bindings = torch.einsum("...arp,kp->...kar", tensor, self.position_duals)  # B_i: [..., K, d_Arg, d_Rel]
        relation = self.relation_probe(self.relation_dual(bindings.sum(dim=-3).flatten(-2)))  # [..., d_Rel]
        arguments = torch.einsum("...kar,...r->...ka", bindings, relation)  # a_i: [..., K, d_Arg]
        return relation, self.argument_probe(arguments)


class UnbindingReadout(nn.Module):
    """TP-N2F: unbinding, then l_r = L_r r'_rel and l_ai = L_a a_i with one shared L_a (Eqs. 47-49)."""

    def __init__(self, d_argument: int, d_relation: int, d_position: int, arity: int, n_relations: int,
                 n_arguments: int):
        super().__init__()
        self.unbinding = TupleUnbinding(d_argument, d_relation, d_position, arity)
        self.relation_head = nn.Linear(d_relation, n_relations)  # L_r
        self.argument_head = nn.Linear(d_argument, n_arguments)  # L_a, shared by the K slots

    def forward(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """hidden: [..., d_H]. Returns (relation logits [..., n_rel], argument logits [..., K, n_arg])."""
        relation, arguments = self.unbinding(hidden)
        return self.relation_head(relation), self.argument_head(arguments)


class LinearReadout(nn.Module):
    """Baseline: separate linear heads for the relation and for each of the K argument slots."""

    def __init__(self, d_hidden: int, arity: int, n_relations: int, n_arguments: int):
        super().__init__()
        self.arity, self.n_arguments = arity, n_arguments
        self.relation_head = nn.Linear(d_hidden, n_relations)
        self.argument_heads = nn.Linear(d_hidden, arity * n_arguments)  # K heads side by side

    def forward(self, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """hidden: [..., d]. Returns (relation logits [..., n_rel], argument logits [..., K, n_arg])."""
        arguments = self.argument_heads(hidden).unflatten(-1, (self.arity, self.n_arguments))
        return self.relation_head(hidden), arguments


class TupleDecoder(nn.Module):
    """Attentional LSTM over tuples with a readout; the TP-N2F decoder or the baseline's."""

    def __init__(self, d_state: int, d_memory: int, n_relations: int, n_arguments: int, arity: int,
                 d_embedding: int, readout: nn.Module, dropout: float, authors_code: bool = False):
        super().__init__()
        self.arity = arity
        self.relation_embedding = nn.Embedding(n_relations, d_embedding)  # w_Rel
        self.argument_embedding = nn.Embedding(n_arguments, d_embedding)  # w_Arg (shared by the slots)
        self.cell = nn.LSTMCell((1 + arity) * d_embedding, d_state)  # Tuple-LSTM (Eqs. 32-37)
        self.attention = LuongAttention(d_state, d_memory, general_score=authors_code, memory_bias=authors_code)
        self.attention_probe = nn.Identity()  # [B, T, S]
        self.readout = readout
        self.dropout = nn.Dropout(dropout)

    def embed(self, tuples: Tensor) -> Tensor:
        """tuples: [B, T, 1 + K] ids -> w_d (Eq. 31) [B, T, (1 + K) * e]."""
        relation = self.relation_embedding(tuples[..., 0])  # [B, T, e]
        arguments = self.argument_embedding(tuples[..., 1:]).flatten(-2)  # [B, T, K * e]
        return self.dropout(torch.cat([relation, arguments], dim=-1))

    def run(self, tuples_in: Tensor, state: tuple[Tensor, Tensor], keys: Tensor, pad_mask: Tensor
            ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Feed `tuples_in` [B, T, 1 + K] from `state` (H, c) ([B, d] each); keys: projected memory
        [B, S, d]. Returns (attentional hidden states H^1..H^T [B, T, d], the state after them)."""
        inputs = self.embed(tuples_in)  # [B, T, d_dec]
        hidden, cell = state
        outputs, weights = [], []
        for t in range(inputs.size(1)):
            h_input, cell = self.cell(inputs[:, t], (hidden, cell))  # Eqs. 32-37, [B, d]
            hidden, attention = self.attention(h_input, keys, pad_mask)  # Eq. 38, [B, d], [B, S]
            outputs.append(hidden)
            weights.append(attention)
        self.attention_probe(torch.stack(weights, dim=1))  # [B, T, S]
        return torch.stack(outputs, dim=1), (hidden, cell)  # [B, T, d]
