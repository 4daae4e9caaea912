"""Weight initialisation schemes of the Transformer-family archs (config field `init`).

- `authors`: what the TP-Transformer authors' released model files (ischlag/TP-Transformer,
  models/tp-transformer.py and models/transformer.py) leave a model with after construction:
  E ~ N(0, 1/d_z), so the input E x sqrt(d_z) is ~N(0, 1) and the tied output layer
  (Eq. 8) starts with logits of unit scale; W^(p) ~ N(0, 1/d_z) with the role of Eq. 2
  taken as r = W^(p) e + b^(p) + 1 ("such that initially ~N(1,1)"): the +1 is folded
  into b^(p)'s starting value, which gives the same function and the same gradients;
  feed-forward matrices Xavier-uniform. Attention differs between their two files: the
  Transformer's attention calls its reset method (W^(q), W^(k), W^(v), W^(o) Xavier-uniform),
  the TP-Transformer's never does, so its W^(q), W^(k), W^(v), W^(r) and W^(o) keep PyTorch's
  nn.Linear default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (std 1/sqrt(3 d_z): 0.58x Xavier's,
  and W^(r) 0.29x the N(0, 1/d_r) its unused reset method names). Here: every attention with
  the continuous-role binding keeps the default, every other matrix is Xavier-uniform.
  Biases keep PyTorch's default, as in the authors' code, which never re-initialises a bias.
  LayerNorms start at the identity. benchmarks/parity.py compares the two files' scales and
  training with the project's (docs/parity.md).
- `authors_xavier`: as `authors`, but the TP-Transformer's attention as its unused reset
  method would set it: Xavier-uniform, W^(r) ~ N(0, 1/d_r) (this project's `authors` until
  2026-11-27; per step it learns more slowly than the authors' files, docs/parity.md).
- `paper_literal`: the literal reading of Schlag et al. Sec. 4.1: E ~ N(0, 1) (then
  scaled by sqrt(d_z)), W^(p) ~ N(1, 1), Xavier-uniform elsewhere, zero biases.
- `pytorch`: the modules' own defaults (nothing is changed here).

A TPT-d role dictionary keeps its N(0, 1) start under every scheme (it is L2-normalised
on every forward); its score matrix W_r is one of the "other" matrices. The full tensor
product's W^(r) starts at N(0, 1/d_r) under both `authors` schemes (their code has no such variant).
"""

from __future__ import annotations

import torch
from torch import nn

from tprepro.models.attention import MultiHeadAttention
from tprepro.models.binding import ContinuousRoleBinding
from tprepro.models.config import INITS, Init
from tprepro.models.tpr_bindings import FullTensorBinding


def initialise(model: nn.Module, tokens: nn.Embedding, role: nn.Linear | None, scheme: str) -> None:
    """Initialise `model` in place by `scheme`. `tokens` is E and `role` is W^(p), b^(p) (or None)."""
    if scheme in (Init.AUTHORS, Init.AUTHORS_XAVIER):
        init_authors(model, tokens, role, xavier_tp_attention=scheme == Init.AUTHORS_XAVIER)
    elif scheme == Init.PAPER_LITERAL:
        init_paper_literal(model, tokens, role)
    elif scheme != Init.PYTORCH:
        raise ValueError(f"unknown init scheme {scheme!r}; known: {', '.join(INITS)}")


def init_authors(model: nn.Module, tokens: nn.Embedding, role: nn.Linear | None,
                 xavier_tp_attention: bool = False) -> None:
    """The authors' model files (see the module docstring); `xavier_tp_attention`: `authors_xavier`."""
    kept = set() if xavier_tp_attention else set(map(id, default_initialised(model)))
    for module in model.modules():
        if isinstance(module, nn.Linear) and id(module) not in kept:
            nn.init.xavier_uniform_(module.weight)  # the bias keeps PyTorch's default
    d_model = tokens.embedding_dim
    nn.init.normal_(tokens.weight, mean=0.0, std=d_model**-0.5)
    if role is not None:
        nn.init.normal_(role.weight, mean=0.0, std=d_model**-0.5)
        with torch.no_grad():
            role.bias.add_(1.0)  # r = W^(p) e + b^(p) + 1
    for module in model.modules():
        if isinstance(module, (ContinuousRoleBinding, FullTensorBinding)) and id(module.role_proj) not in kept:
            d_role = module.role_proj.out_features // module.n_heads  # d_r (= d_k for continuous_role)
            nn.init.normal_(module.role_proj.weight, mean=0.0, std=d_role**-0.5)


def default_initialised(model: nn.Module) -> list[nn.Linear]:
    """The matrices the authors' TP-Transformer file leaves at nn.Linear's default: W^(q), W^(k), W^(v),
    W^(r) and W^(o) of every continuous-role attention."""
    return [linear for attention in model.modules()
            if isinstance(attention, MultiHeadAttention) and isinstance(attention.binding, ContinuousRoleBinding)
            for linear in (attention.q_proj, attention.k_proj, attention.v_proj, attention.binding.role_proj,
                           attention.out_proj)]


def init_paper_literal(model: nn.Module, tokens: nn.Embedding, role: nn.Linear | None) -> None:
    """Sec. 4.1 read literally: E ~ N(0, 1), W^(p) ~ N(1, 1), every other matrix
    Xavier-uniform; biases (unspecified in the paper) start at zero."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    nn.init.normal_(tokens.weight, mean=0.0, std=1.0)
    if role is not None:
        nn.init.normal_(role.weight, mean=1.0, std=1.0)
