"""The model configuration: the settings every architecture shares (`ModelConfig`) and a slot
for those of its family (`ModelConfig.family`: `UniversalConfig`, `AdaptiveConfig`, `LSTMConfig`,
`N2FConfig`, each beside its models). registry.resolve_model_config builds one from a named
preset plus flat overrides (params.yaml's `d_model: 64`, `tuple_arity: 3`), routing each key to the
core or to the arch's family; the size blocks the presets share are at the end."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tprepro.errors import TpreproError, unknown


class Init(StrEnum):
    """The weight initialisation schemes (models/initialisation.py; config field `init`, stored as its string)."""

    AUTHORS = "authors"
    AUTHORS_XAVIER = "authors_xavier"
    PAPER_LITERAL = "paper_literal"
    PYTORCH = "pytorch"


INITS = tuple(scheme.value for scheme in Init)
RENAMED_INITS = {"paper": "paper_literal"}  # names stored in models exported before the rename


def check_positive(settings, where: str, *keys: str) -> None:
    """Raise TpreproError naming `where.key` for the first of `keys` below 1."""
    for key in keys:
        if getattr(settings, key) < 1:
            raise TpreproError(f"{where}.{key}: must be a positive integer, got {getattr(settings, key)}")


@dataclass
class ModelConfig:
    arch: str = "tp_transformer"  # model builder in the arch registry (registry.register_arch)
    d_model: int = 512  # d_z: width of embeddings and of every hidden state
    n_heads: int = 8  # H: attention heads per layer; d_k = d_model // n_heads
    n_encoder_layers: int = 6  # L: encoder cells (Eq. 1)
    n_decoder_layers: int = 6  # decoder cells (Sec. 2.3)
    d_ff: int = 2048  # d_f: hidden width of the feed-forward sub-layer (Eq. 7)
    dropout: float = 0.0  # on embeddings and sub-layer outputs; the paper states none, so 0
    binding: str = "continuous_role"  # binding registry: "identity" (Transformer) | "continuous_role" (Eq. 3, 6)
    role_embedding: bool = True  # Eq. 2: z_0 = e ⊙ (W^(p) e + b^(p)) instead of z_0 = e
    max_positions: int = 512  # longest source or target sequence (rows of the sinusoidal table)
    init: str = "authors"  # initialisation.py: "authors" (their model files) | "authors_xavier" | "paper_literal" | "pytorch"
    n_roles: int = 50  # N_r: role-dictionary size of discrete_role (TPT-d; paper: 50) and TP-N2F's n_R
    d_role: int = 64  # d_r: role width of discrete_role (= d_model / n_heads), full_tensor and TP-N2F's d_R
    family: Any = None  # the arch family's own settings (registry.register_arch's `family`); None: none

    def validate(self, where: str = "model") -> ModelConfig:
        """Raise TpreproError naming the first bad setting as `where.key`; return self. What depends
        on the arch (known? heads dividing d_model?) registry.validate_config checks first."""
        from tprepro.models.binding import list_bindings  # torch: not needed to read settings

        if self.binding not in list_bindings():
            raise TpreproError(f"{where}.binding: {unknown('binding', self.binding, list_bindings())}")
        if self.init not in INITS:
            renamed = " ('paper' is now 'paper_literal')" if self.init == "paper" else ""
            raise TpreproError(f"{where}.init: unknown init {self.init!r}{renamed}; known: {', '.join(INITS)}")
        check_positive(self, where, "d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff",
                       "max_positions", "n_roles", "d_role")
        if not 0.0 <= self.dropout < 1.0:
            raise TpreproError(f"{where}.dropout: must be in [0, 1), got {self.dropout}")
        if self.binding == "discrete_role" and self.d_role * self.n_heads != self.d_model:
            raise TpreproError(f"{where}.d_role: {self.d_role} * n_heads={self.n_heads} must equal "
                               f"d_model={self.d_model} for the discrete_role binding (R ⊙ F)")
        if self.family is not None:
            self.family.validate(where)
        return self


# ---- size blocks the presets beside each model share ----------------------------------------------
# Sec. 4.1: d_z=512, d_f=2048, H=8, L=6 (encoder and decoder). Dropout is not mentioned in the
# paper, so it stays at the ModelConfig default of 0. Initialisation: the authors' released code
# (initialisation.py; `init: paper_literal` is Sec. 4.1 read literally).
PAPER_SIZES = dict(d_model=512, n_heads=8, n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.0,
                   init="authors")
# Tiny CPU configurations that train in minutes (d_f = 4 d_z as in the paper).
TINY_SIZES = dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256, dropout=0.0, init="authors")
# The archs without TPR binding (plain attention, LSTMs, the N2F models' attention-free parts).
NO_BINDING = dict(binding="identity", role_embedding=False)
