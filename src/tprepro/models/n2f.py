"""TP-N2F (Chen et al., "Natural- to formal-language generation using tensor product
representations") and its ablations: one model composing an encoder with a tuple decoder.

    arch        encoder                          decoder
    tp_n2f      TP-N2F encoder (tpr_encoder.py)  TP-N2F decoder (unbinding readout)
    lstm2lstm   LSTM                             attentional LSTM, linear heads (seq2prog)
    tp2lstm     TP-N2F encoder                   attentional LSTM, linear heads
    lstm2tp     LSTM                             TP-N2F decoder

Builders: builder(cfg, vocab_size, pad_id, n_relations=..., n_arguments=...): the source
word vocabulary, then the relation and argument output vocabularies with the reserved ids
of tprepro.experiments.n2f.tuples (REL_PAD=0, REL_BOS=1, REL_EOS=2, ARG_PAD=0, ARG_NONE=1).

Model API: forward(src [B, S], tgt_in [B, T, 1+K]) -> TupleLogits; target_loss(output,
tgt_out, reduction) (Eq. 12); greedy_decode(src, max_tuples) (Sec. 3.3).

Bridge from encoder to decoder: the Reasoning MLP (A.2.2; `reasoning_layers` linear+tanh
layers) maps the encoder summary (T_S, or the LSTM encoder's last hidden state) to the
decoder's initial hidden state H^0 = tanh(z); the paper does not say what the initial
cell state is: we use the last layer's pre-activation z, as a public TP-N2F implementation
does. lstm2lstm has no reasoning MLP: its decoder starts from the encoder's final (h, c),
as in a standard seq2seq. The LSTM encoder is one layer, one direction, `lstm_hidden` wide
(Appendix A.1), over packed sequences.
Not stated in the paper, our choices: word-embedding width `d_model` and tuple-embedding
width `d_tuple_embedding` (presets: 128 each, what a public implementation of the paper
used); dropout (cfg.dropout) on word and tuple embeddings only; PyTorch default inits except
the dictionaries F, R and the unbinding vectors p'_i (see tpr_encoder.py, tuple_decoder.py).

Loss (Eq. 12) and padding: with `mask_padding` (default) target tuples whose relation is
REL_PAD contribute nothing and "mean" averages over real tuples. mask_padding=False treats
pad tuples as ordinary class-0 targets (Eq. 12 applied to the padded batch as is). For the
record, a public implementation's MathQA script instead gives the <pad> class zero weight in
each of its per-slot cross entropies (pad slots ignored, mean taken per slot, not per tuple).
Greedy decoding takes the plain argmax (a REL_PAD or REL_BOS relation may be chosen by an
untrained model); call model.eval() first to switch dropout off.

The authors' code (ckzbullbullet/TP-N2F, src/model.py) adds three affine pieces the paper does not
describe; `variant: authors_code` switches them on (default `paper`, the paper's equations):
Luong's "general" attention score h W_a k instead of Eq. 39's dot product (their linear_in), a bias
on the memory projection (their encoder2decoderCtx), and affine filler and role dictionaries
f = F a + b_F, r = R a + b_R (their nn.Linear F and R). `init: authors` is their start (their
init_weights; `init_authors_code` below). With both, tp_n2f holds their weights exactly and, on
batches without padding, gives their losses step for step (benchmarks/parity_n2f.py). What stays
different is padding: their scripts pad every problem to 128 positions and mask nothing, so their
encoder reads the pads and their attention attends to them; here pads are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tprepro.data.tuple_ids import ARG_NONE, ARG_PAD, REL_BOS, REL_EOS, REL_PAD
from tprepro.errors import TpreproError
from tprepro.models.config import NO_BINDING, Init, ModelConfig, check_positive
from tprepro.models.registry import register_arch, register_preset
from tprepro.models.tpr_encoder import EncoderOutput, TPREncoder
from tprepro.models.tuple_decoder import LinearReadout, TupleDecoder, UnbindingReadout

KINDS = ("tpr", "lstm")
VARIANTS = ("paper", "authors_code")


class TupleLogits(NamedTuple):
    """Scores of every relation and argument slot of each output tuple."""

    relation: Tensor  # [B, T, n_relations]
    arguments: Tensor  # [B, T, K, n_arguments]


@dataclass
class N2FConfig:
    """The settings of the N2F archs (cfg.family; the core's d_model is the word-embedding width and
    its n_roles / d_role are n_R / d_R). Appendix A.1 names."""

    n_fillers: int = 150  # n_F: fillers the TP-N2F encoder soft-selects from (Sec. 3.2.1; paper: 150)
    d_filler: int = 30  # d_F: filler width; the encoder's TPR T_t has d_T = d_F * d_R entries
    d_relation: int = 20  # d_Rel: width of the relation unbinding vector r'_rel (Eq. 44)
    d_argument: int = 10  # d_Arg: width of an unbound argument vector a_i (Eq. 45)
    d_position: int = 5  # d_Pos: width of a positional unbinding vector p'_i; d_H = d_Arg * d_Rel * d_Pos
    tuple_arity: int = 2  # K: arguments per relational tuple (MathQA 2, AlgoLisp 3)
    d_tuple_embedding: int = 128  # width of each relation/argument embedding; decoder input (1 + K) * this
    lstm_hidden: int = 100  # the LSTM encoder's and decoder's width (one layer, one direction; paper: 100)
    selection_temperature: float = 0.1  # T of the filler/role soft selection softmax(W h / T) (Eq. 19, 27)
    reasoning_layers: int = 1  # linear+tanh layers of the Reasoning MLP from T_S to decoder state (A.2.2)
    mask_padding: bool = True  # the loss skips REL_PAD target tuples; False: they are class-0 targets
    variant: str = "paper"  # "authors_code": the authors' general attention score and biases (module docstring)

    def validate(self, where: str) -> None:
        check_positive(self, where, "n_fillers", "d_filler", "d_relation", "d_argument", "d_position",
                       "tuple_arity", "d_tuple_embedding", "lstm_hidden", "reasoning_layers")
        if not self.selection_temperature > 0:
            raise TpreproError(f"{where}.selection_temperature: must be > 0, got {self.selection_temperature}")
        if self.variant not in VARIANTS:
            raise TpreproError(f"{where}.variant: unknown variant {self.variant!r}; known: {', '.join(VARIANTS)}")


class LSTMEncoder(nn.Module):
    """One-layer, one-direction LSTM over the embedded words (the seq2prog encoder)."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int):
        super().__init__()
        self.pad_id = pad_id
        self.hidden = cfg.family.lstm_hidden
        self.embedding = nn.Embedding(vocab_size, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.lstm = nn.LSTM(cfg.d_model, self.hidden, batch_first=True)

    @property
    def d_memory(self) -> int:
        return self.hidden

    @property
    def d_summary(self) -> int:
        return self.hidden

    def forward(self, src: Tensor) -> EncoderOutput:
        """src: [B, S] word ids."""
        pad_mask = src == self.pad_id  # [B, S]
        lengths = (~pad_mask).sum(dim=1).clamp(min=1).cpu()  # [B]
        packed = pack_padded_sequence(self.dropout(self.embedding(src)), lengths, batch_first=True,
                                      enforce_sorted=False)
        outputs, (h, c) = self.lstm(packed)  # h, c: [1, B, H] at each row's last real position
        memory, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))  # [B, S, H]
        return EncoderOutput(memory, pad_mask, h[-1], (h[-1], c[-1]))


class ReasoningMLP(nn.Module):
    """f_mapping (Eq. 30): `layers` linear+tanh layers; returns (H^0 = tanh(z), c^0 = z)."""

    def __init__(self, d_in: int, d_state: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d_in if i == 0 else d_state, d_state) for i in range(layers))

    def forward(self, summary: Tensor) -> tuple[Tensor, Tensor]:
        """summary: [B, d_in] -> (hidden [B, d_state], cell [B, d_state])."""
        hidden = summary
        for layer in self.layers:
            pre = layer(hidden)
            hidden = torch.tanh(pre)
        return hidden, pre


class N2FModel(nn.Module):
    """An encoder ("tpr" | "lstm") and a relational-tuple decoder ("tpr" | "lstm")."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, pad_id: int, n_relations: int, n_arguments: int,
                 encoder: str, decoder: str):
        super().__init__()
        if encoder not in KINDS or decoder not in KINDS:
            raise ValueError(f"encoder and decoder must be one of {KINDS}, got {encoder!r}, {decoder!r}")
        if cfg.init not in N2F_INITS:
            raise TpreproError(f"model.init: arch {cfg.arch} supports {' and '.join(map(repr, N2F_INITS))} (got "
                               f"{cfg.init!r}): the TP-N2F paper states no initialisation, 'authors' is their code's")
        for key, size, least in (("n_relations", n_relations, REL_EOS + 1), ("n_arguments", n_arguments, ARG_NONE + 1)):
            if size < least:
                raise TpreproError(f"model.{key}: {size} is fewer than the {least} reserved ids")
        self.cfg = cfg
        self.pad_id = pad_id
        n2f = cfg.family
        self.arity = n2f.tuple_arity
        self.kinds = (encoder, decoder)
        self.encoder = TPREncoder(cfg, vocab_size, pad_id) if encoder == "tpr" else LSTMEncoder(cfg, vocab_size, pad_id)
        if decoder == "tpr":
            d_state = n2f.d_argument * n2f.d_relation * n2f.d_position  # d_H
            readout = UnbindingReadout(n2f.d_argument, n2f.d_relation, n2f.d_position, n2f.tuple_arity,
                                       n_relations, n_arguments)
        else:
            d_state = n2f.lstm_hidden
            readout = LinearReadout(d_state, n2f.tuple_arity, n_relations, n_arguments)
        self.decoder = TupleDecoder(d_state, self.encoder.d_memory, n_relations, n_arguments, n2f.tuple_arity,
                                    n2f.d_tuple_embedding, readout, cfg.dropout,
                                    authors_code=n2f.variant == "authors_code")
        plain = (encoder, decoder) == ("lstm", "lstm")
        self.reasoning = None if plain else ReasoningMLP(self.encoder.d_summary, d_state, n2f.reasoning_layers)
        if cfg.init == Init.AUTHORS:
            init_authors_code(self)

    def encode(self, src: Tensor) -> tuple[EncoderOutput, tuple[Tensor, Tensor], Tensor]:
        """src: [B, S]. Returns (encoder output, decoder initial state (H^0, c^0) [B, d] each,
        projected memory [B, S, d])."""
        encoded = self.encoder(src)
        if self.reasoning is None:
            state = encoded.final_state
        else:
            state = self.reasoning(encoded.summary)
        pad_mask = encoded.pad_mask & ~encoded.pad_mask.all(dim=1, keepdim=True)  # an all-pad row attends anyway
        keys = self.decoder.attention.keys(encoded.memory)  # [B, S, d]
        return encoded._replace(pad_mask=pad_mask), state, keys

    def forward(self, src: Tensor, tgt_in: Tensor) -> TupleLogits:
        """Teacher forcing. src: [B, S]; tgt_in: [B, T, 1 + K], tgt_in[:, 0] the start tuple."""
        if tgt_in.dim() != 3 or tgt_in.size(-1) != 1 + self.arity:
            raise TpreproError(f"model input: tgt_in must be [B, T, 1 + K] with K = tuple_arity = {self.arity}, "
                               f"got shape {list(tgt_in.shape)}")
        encoded, state, keys = self.encode(src)
        hidden, _ = self.decoder.run(tgt_in, state, keys, encoded.pad_mask)  # [B, T, d]
        return TupleLogits(*self.decoder.readout(hidden))

    def target_loss(self, output: TupleLogits, tgt_out: Tensor, reduction: str = "mean") -> Tensor:
        """Eq. 12: relation cross entropy plus the K argument cross entropies of each tuple, summed.

        mask_padding: target tuples whose relation is REL_PAD are left out; "mean" divides by the
        real tuples. Without it pad tuples are ordinary class-0 targets and "mean" divides by B * T.
        """
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        relation = F.cross_entropy(output.relation.flatten(0, 1), tgt_out[..., 0].flatten(),
                                   reduction="none").view(tgt_out.shape[:2])  # [B, T]
        arguments = F.cross_entropy(output.arguments.flatten(0, 2), tgt_out[..., 1:].flatten(),
                                    reduction="none").view(tgt_out.shape[:2] + (self.arity,))  # [B, T, K]
        per_tuple = relation + arguments.sum(dim=-1)  # [B, T]
        if self.cfg.family.mask_padding:
            real = tgt_out[..., 0] != REL_PAD  # [B, T]
            total = (per_tuple * real).sum()
            count = real.sum()
        else:
            total = per_tuple.sum()
            count = per_tuple.new_tensor(per_tuple.numel())
        return total if reduction == "sum" else total / count.clamp(min=1)

    def start_tuples(self, batch: int, device: torch.device) -> Tensor:
        """(REL_BOS, ARG_NONE, ...) for every row: [B, 1, 1 + K]."""
        start = torch.full((batch, 1, 1 + self.arity), ARG_NONE, dtype=torch.long, device=device)
        start[..., 0] = REL_BOS
        return start

    @torch.no_grad()
    def greedy_decode(self, src: Tensor, max_tuples: int) -> Tensor:
        """Most likely relation and most likely argument of each slot, fed back as the next input
        (Sec. 3.3). Returns [B, T', 1 + K], T' <= max_tuples: each row up to and including its
        REL_EOS tuple, then pad tuples (REL_PAD, ARG_PAD, ...); stops once every row has ended."""
        encoded, state, keys = self.encode(src)
        batch = src.size(0)
        previous = self.start_tuples(batch, src.device)  # [B, 1, 1 + K]
        ended = torch.zeros(batch, dtype=torch.bool, device=src.device)
        pad = torch.full((1 + self.arity,), ARG_PAD, dtype=torch.long, device=src.device)
        pad[0] = REL_PAD
        decoded = []
        for _ in range(max_tuples):
            hidden, state = self.decoder.run(previous, state, keys, encoded.pad_mask)  # [B, 1, d]
            relation, arguments = self.decoder.readout(hidden)  # [B, 1, n_rel], [B, 1, K, n_arg]
            previous = torch.cat([relation.argmax(-1)[..., None], arguments.argmax(-1)], dim=-1)  # [B, 1, 1 + K]
            decoded.append(torch.where(ended[:, None, None], pad, previous))
            ended |= previous[:, 0, 0] == REL_EOS
            if bool(ended.all()):
                break
        if not decoded:
            return torch.empty(batch, 0, 1 + self.arity, dtype=torch.long, device=src.device)
        return torch.cat(decoded, dim=1)


N2F_INITS = (Init.PYTORCH.value, Init.AUTHORS.value)


@torch.no_grad()
def init_authors_code(model: N2FModel) -> None:
    """The TP-N2F authors' start (their TPN2F.init_weights and decoder): the word, relation and argument
    embeddings uniform in +-0.1; the biases of the Reasoning MLP's first layer and of the output heads
    zero; the positional unbinding vectors p'_i uniform in [0, 1); the Tuple-LSTM's input weights and
    bias at nn.Linear's scale, +-1/sqrt(input width) (their cell is two nn.Linear), where nn.LSTMCell
    uses +-1/sqrt(hidden width). The rest keeps PyTorch's defaults."""
    for embedding in (model.encoder.embedding, model.decoder.relation_embedding, model.decoder.argument_embedding):
        embedding.weight.uniform_(-0.1, 0.1)
    cell = model.decoder.cell
    bound = cell.input_size ** -0.5
    cell.weight_ih.uniform_(-bound, bound)
    cell.bias_ih.uniform_(-bound, bound)
    if model.reasoning is not None:
        model.reasoning.layers[0].bias.zero_()
    readout = model.decoder.readout
    readout.relation_head.bias.zero_()
    if isinstance(readout, UnbindingReadout):
        readout.argument_head.bias.zero_()
        readout.unbinding.position_duals.uniform_(0.0, 1.0)
    else:
        readout.argument_heads.bias.zero_()


# The core settings the N2F archs read beyond CORE_SETTINGS (their own are N2FConfig's).
N2F_SETTINGS = ("n_roles", "d_role")


def _builder(arch: str, encoder: str, decoder: str) -> None:
    def build(cfg: ModelConfig, vocab_size: int, pad_id: int, *, n_relations: int, n_arguments: int) -> N2FModel:
        return N2FModel(cfg, vocab_size, pad_id, n_relations, n_arguments, encoder, decoder)

    build.__name__ = build.__qualname__ = f"build_{arch}"
    register_arch(arch, task="n2f", settings=N2F_SETTINGS, family=N2FConfig)(build)


_builder("tp_n2f", "tpr", "tpr")
_builder("lstm2lstm", "lstm", "lstm")
_builder("tp2lstm", "tpr", "lstm")
_builder("lstm2tp", "lstm", "tpr")


# ---- TP-N2F and its ablations (issue 4) -----------------------------------------------------
# Appendix A.1: n_F=150, n_R=50 and, per dataset, d_F, d_R, d_Rel, d_Arg, d_Pos; a one-layer Reasoning
# MLP; the LSTM baselines (seq2prog = lstm2lstm, tp2lstm, lstm2tp) have hidden size 100, one layer, one
# direction. The word- and tuple-embedding widths are not stated in the paper: 128, what a public
# implementation of the paper used. MathQA tuples have 2 arguments, AlgoLisp tuples 3.
_N2F = dict(init="pytorch", dropout=0.0, selection_temperature=0.1, reasoning_layers=1,
            mask_padding=True, variant="paper", **NO_BINDING)
_N2F_PAPER = dict(_N2F, d_model=128, d_tuple_embedding=128, lstm_hidden=100, n_fillers=150, n_roles=50)
_N2F_DATASETS = {
    "mathqa": dict(d_filler=30, d_role=20, d_relation=20, d_argument=10, d_position=5, tuple_arity=2),
    "algolisp": dict(d_filler=30, d_role=30, d_relation=30, d_argument=20, d_position=5, tuple_arity=3),
}
for _dataset, _sizes in _N2F_DATASETS.items():
    for _arch in ("tp_n2f", "lstm2lstm", "tp2lstm", "lstm2tp"):
        register_preset(f"{_arch}_{_dataset}", **_N2F_PAPER, **_sizes, arch=_arch)
# Tiny CPU configurations (arity 2; set tuple_arity per dataset in params): d_T = 48, d_H = 108.
_N2F_TINY = dict(_N2F, d_model=32, d_tuple_embedding=16, lstm_hidden=64, n_fillers=20, n_roles=10, d_filler=8,
                 d_role=6, d_relation=6, d_argument=6, d_position=3, tuple_arity=2)
for _arch in ("tp_n2f", "lstm2lstm", "tp2lstm", "lstm2tp"):
    register_preset(f"{_arch}_tiny", **_N2F_TINY, arch=_arch)
