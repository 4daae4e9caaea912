"""The model configuration: one dataclass (resolved from a named preset plus overrides by
registry.resolve_model_config), and the size blocks the presets share."""

from __future__ import annotations

from dataclasses import dataclass

from tprepro.errors import TpreproError, unknown

INITS = ("authors", "paper_literal", "pytorch")  # models/initialisation.py
RENAMED_INITS = {"paper": "paper_literal"}  # names stored in models exported before the rename


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
    init: str = "authors"  # initialisation.py: "authors" (their released code) | "paper_literal" | "pytorch"
    n_roles: int = 50  # N_r: role-dictionary size of the discrete_role binding (TPT-d; paper: 50)
    d_role: int = 64  # d_r: role width of discrete_role (must be d_model / n_heads) and full_tensor (paper: 64)
    ut_steps: int = 6  # T: applications of the shared encoder and decoder block (arch universal_transformer)
    act_max_steps: int = 24  # ACT: most updates per position (adaptive_universal_transformer; Wangperawong: 24)
    act_epsilon: float = 0.01  # ACT: a position halts once its halting probabilities reach 1 - epsilon
    ponder_weight: float = 0.01  # ACT: tau, weight of the mean ponder cost N(t) + R(t) added to the loss
    lstm_hidden: int = 2048  # arch lstm: hidden units of the encoder and decoder LSTMs
    lstm_layers: int = 1  # arch lstm: stacked LSTM layers in encoder and decoder
    # ---- TP-N2F (Chen et al.) and its LSTM ablations: archs tp_n2f, lstm2lstm, tp2lstm, lstm2tp (n2f.py).
    # They reuse d_model (word-embedding width), n_roles (n_R), d_role (d_R), lstm_hidden (baseline
    # LSTM width, one layer, one direction) and dropout (on word and tuple embeddings).
    n_fillers: int = 150  # n_F: fillers the TP-N2F encoder soft-selects from (Sec. 3.2.1; paper: 150)
    d_filler: int = 30  # d_F: filler width; the encoder's TPR T_t has d_T = d_F * d_R entries
    d_relation: int = 20  # d_Rel: width of the relation unbinding vector r'_rel (Eq. 44)
    d_argument: int = 10  # d_Arg: width of an unbound argument vector a_i (Eq. 45)
    d_position: int = 5  # d_Pos: width of a positional unbinding vector p'_i; d_H = d_Arg * d_Rel * d_Pos
    tuple_arity: int = 2  # K: arguments per relational tuple (MathQA 2, AlgoLisp 3)
    d_tuple_embedding: int = 128  # width of each relation/argument embedding; decoder input (1 + K) * this
    selection_temperature: float = 0.1  # T of the filler/role soft selection softmax(W h / T) (Eq. 19, 27)
    reasoning_layers: int = 1  # linear+tanh layers of the Reasoning MLP from T_S to decoder state (A.2.2)
    mask_padding: bool = True  # tuple loss skips REL_PAD target tuples; False: they are class-0 targets (n2f.py)

    def validate(self, where: str = "model") -> ModelConfig:
        """Raise TpreproError naming the first bad setting as `where.key`; return self. What depends
        on the arch (known? heads dividing d_model?) registry.validate_config checks first."""
        from tprepro.models.binding import list_bindings  # torch: not needed to read settings

        if self.binding not in list_bindings():
            raise TpreproError(f"{where}.binding: {unknown('binding', self.binding, list_bindings())}")
        if self.init not in INITS:
            renamed = " ('paper' is now 'paper_literal')" if self.init == "paper" else ""
            raise TpreproError(f"{where}.init: unknown init {self.init!r}{renamed}; known: {', '.join(INITS)}")
        positive = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_positions",
                    "n_roles", "d_role", "ut_steps", "act_max_steps", "lstm_hidden", "lstm_layers",
                    "n_fillers", "d_filler", "d_relation", "d_argument", "d_position", "tuple_arity",
                    "d_tuple_embedding", "reasoning_layers")
        for key in positive:
            if getattr(self, key) < 1:
                raise TpreproError(f"{where}.{key}: must be a positive integer, got {getattr(self, key)}")
        if not 0.0 <= self.dropout < 1.0:
            raise TpreproError(f"{where}.dropout: must be in [0, 1), got {self.dropout}")
        if self.binding == "discrete_role" and self.d_role * self.n_heads != self.d_model:
            raise TpreproError(f"{where}.d_role: {self.d_role} * n_heads={self.n_heads} must equal "
                               f"d_model={self.d_model} for the discrete_role binding (R ⊙ F)")
        if not 0.0 < self.act_epsilon < 1.0:
            raise TpreproError(f"{where}.act_epsilon: must be in (0, 1), got {self.act_epsilon}")
        if self.ponder_weight < 0:
            raise TpreproError(f"{where}.ponder_weight: must be >= 0, got {self.ponder_weight}")
        if not self.selection_temperature > 0:
            raise TpreproError(f"{where}.selection_temperature: must be > 0, got {self.selection_temperature}")
        if not isinstance(self.mask_padding, bool):
            raise TpreproError(f"{where}.mask_padding: expected bool, got {self.mask_padding!r}")
        return self


def stored_model_config(values: dict) -> ModelConfig:
    """The ModelConfig an exported model stored; an init stored under an old name gets its new one
    (the init only shapes the starting weights, which the stored weights replace)."""
    values = dict(values)
    values["init"] = RENAMED_INITS.get(values.get("init"), values.get("init", ModelConfig.init))
    return ModelConfig(**values)


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
