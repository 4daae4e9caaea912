"""TP-N2F and its ablations (models/n2f.py, tpr_encoder.py, tuple_decoder.py): TPR binding and
unbinding, padding, the tuple loss, greedy decoding, training on a tiny task, presets and config."""

from __future__ import annotations

import math

import pytest
import torch

from tprepro.experiments.n2f.tuples import ARG_NONE, ARG_PAD, REL_BOS, REL_EOS, REL_PAD
from tprepro.errors import TpreproError
from tprepro.models import build_model, list_presets, resolve_model_config
from tprepro.models.n2f import N2FModel, TupleLogits
from tprepro.models.probes import capture

ARCHS = ("tp_n2f", "lstm2lstm", "tp2lstm", "lstm2tp")
PAD = 0
VOCAB, N_REL, N_ARG = 16, 7, 8  # source words 1..15; relations 3..6; arguments 2..7


@pytest.fixture(autouse=True)
def _threads(one_torch_thread):
    yield


def model_of(arch: str, overrides: dict | None = None) -> N2FModel:
    cfg = resolve_model_config(f"{arch}_tiny", overrides or {})
    return build_model(cfg, VOCAB, PAD, n_relations=N_REL, n_arguments=N_ARG)


def copy_task(n: int, seed: int, arity: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each tuple copies three source words: (x, y, z) -> (relation x + 2, y - 3, z - 3), 1-3 tuples.
    Returns src [n, 9], tgt_in [n, 4, 1 + K], tgt_out [n, 4, 1 + K] with pad tuples after the end."""
    g = torch.Generator().manual_seed(seed)
    src = torch.full((n, 9), PAD, dtype=torch.long)
    tgt_in = torch.full((n, 4, 1 + arity), ARG_PAD, dtype=torch.long)
    tgt_in[..., 0] = REL_PAD
    tgt_out = tgt_in.clone()
    for row in range(n):
        count = int(torch.randint(1, 4, (1,), generator=g))
        tuples = [[REL_BOS] + [ARG_NONE] * arity]
        for i in range(count):
            x = int(torch.randint(1, 5, (1,), generator=g))
            y, z = (int(v) for v in torch.randint(5, 11, (2,), generator=g))
            src[row, 3 * i: 3 * i + 3] = torch.tensor([x, y, z])
            tuples.append([x + 2, y - 3, z - 3] + [ARG_NONE] * (arity - 2))
        tuples.append([REL_EOS] + [ARG_NONE] * arity)
        tgt_in[row, : len(tuples) - 1] = torch.tensor(tuples[:-1])
        tgt_out[row, : len(tuples) - 1] = torch.tensor(tuples[1:])
    return src, tgt_in, tgt_out


def teacher_forced_argmax(model: N2FModel, src: torch.Tensor, decoded: torch.Tensor) -> torch.Tensor:
    """argmax of forward() fed the start tuple and the decoded prefix: [B, T', 1 + K]."""
    start = model.start_tuples(src.size(0), src.device)
    with torch.no_grad():
        out = model(src, torch.cat([start, decoded[:, :-1]], dim=1))
    return torch.cat([out.relation.argmax(-1)[..., None], out.arguments.argmax(-1)], dim=-1)


def assert_greedy_is_teacher_forced_argmax(model: N2FModel, src: torch.Tensor, max_tuples: int) -> torch.Tensor:
    decoded = model.greedy_decode(src, max_tuples)
    assert decoded.shape[0] == src.shape[0] and 1 <= decoded.shape[1] <= max_tuples
    assert decoded.shape[2] == 1 + model.arity
    expected = teacher_forced_argmax(model, src, decoded)
    for row in range(src.size(0)):
        rel = decoded[row, :, 0].tolist()
        end = rel.index(REL_EOS) + 1 if REL_EOS in rel else len(rel)
        assert torch.equal(decoded[row, :end], expected[row, :end]), row
        pad = torch.tensor([REL_PAD] + [ARG_PAD] * model.arity)
        assert (decoded[row, end:] == pad).all()  # ended rows are padded
    if decoded.shape[1] < max_tuples:  # stopped early: every row has ended
        assert all(REL_EOS in decoded[row, :, 0].tolist() for row in range(src.size(0)))
    return decoded


# ---- TPR unbinding (Eqs. 42-46) ------------------------------------------------------------------------


@pytest.mark.parametrize("arity", [2, 3])
def test_unbinding_recovers_fillers_exactly_for_orthonormal_roles(arity):
    model = model_of("tp_n2f", {"tuple_arity": arity}).eval()
    unbinding = model.decoder.readout.unbinding
    d_arg, d_rel, d_pos = 6, 6, 3
    g = torch.Generator().manual_seed(1)
    positions = torch.linalg.qr(torch.randn(d_pos, d_pos, generator=g))[0][:arity]  # orthonormal p_i: [K, d_Pos]
    relation = torch.randn(2, 5, d_rel, generator=g)
    relation = relation / relation.norm(dim=-1, keepdim=True)  # unit r_rel per tuple, [B, T, d_Rel]
    arguments = torch.randn(2, 5, arity, d_arg, generator=g)  # a_i, [B, T, K, d_Arg]
    tensor = torch.einsum("btka,btr,kp->btarp", arguments, relation, positions)  # H = sum_i a_i ⊗ r ⊗ p_i
    with torch.no_grad():
        unbinding.position_duals.copy_(positions)  # orthonormal: the duals are the p_i themselves
        unbinding.relation_dual.weight.zero_()  # r'_rel = W_dual(...) + b = r (constant)
        for b in range(2):
            for t in range(5):
                unbinding.relation_dual.bias.copy_(relation[b, t])
                r_out, a_out = unbinding(tensor[b, t].flatten())
                torch.testing.assert_close(r_out, relation[b, t], rtol=0, atol=1e-5)
                torch.testing.assert_close(a_out, arguments[b, t], rtol=0, atol=1e-5)
        # the readout turns the recovered arguments into L_a a_i, one shared L_a
        head = model.decoder.readout.argument_head
        _, logits = model.decoder.readout(tensor[1, 4].flatten())
        torch.testing.assert_close(logits, head(arguments[1, 4]), rtol=0, atol=1e-5)


def test_unbinding_with_dual_vectors_of_non_orthogonal_roles():
    model = model_of("tp_n2f", {"tuple_arity": 3}).eval()
    unbinding = model.decoder.readout.unbinding
    g = torch.Generator().manual_seed(2)
    positions = torch.eye(3) + 0.4 * torch.randn(3, 3, generator=g)  # linearly independent, not orthogonal
    duals = torch.linalg.inv(positions).t()  # p'_i · p_j = δ_ij
    relation = 2.5 * torch.randn(6, generator=g)  # not unit: its dual is r / |r|^2
    arguments = torch.randn(3, 6, generator=g)
    tensor = torch.einsum("ka,r,kp->arp", arguments, relation, positions)
    with torch.no_grad():
        unbinding.position_duals.copy_(duals)
        unbinding.relation_dual.weight.zero_()
        unbinding.relation_dual.bias.copy_(relation / relation.dot(relation))
        _, recovered = unbinding(tensor.flatten())
    torch.testing.assert_close(recovered, arguments, rtol=0, atol=1e-5)


def test_relation_unbinding_vector_is_a_linear_function_of_the_summed_bindings():
    unbinding = model_of("tp_n2f").decoder.readout.unbinding
    hidden = torch.randn(4, 108)
    with torch.no_grad():
        relation, arguments = unbinding(hidden)
        tensor = hidden.view(4, 6, 6, 3)  # [B, d_Arg, d_Rel, d_Pos]
        bindings = [tensor @ p for p in unbinding.position_duals]  # B_i = H · p'_i: [B, d_Arg, d_Rel]
        expected = unbinding.relation_dual((bindings[0] + bindings[1]).flatten(1))  # Eq. 44
        torch.testing.assert_close(relation, expected)
        for i, b in enumerate(bindings):  # a_i = B_i r'_rel (Eqs. 45-46)
            torch.testing.assert_close(arguments[:, i], (b @ relation[:, :, None]).squeeze(-1))


# ---- TPR binding in the encoder (Eqs. 7-8, 13-29) --------------------------------------------------------


def test_tpr_encoder_binds_softly_selected_filler_and_role():
    model = model_of("tp_n2f").eval()
    encoder = model.encoder
    assert model.cfg.family.selection_temperature == 0.1
    src = torch.tensor([[3, 7, 9, 2], [5, 1, PAD, PAD]])
    with torch.no_grad(), capture(model, "filler_probe") as fillers, capture(model, "role_probe") as roles, \
            capture(model, "binding_probe") as bindings:
        encoded = encoder(src)
    a_f, a_r = fillers["encoder.filler_probe"][0], roles["encoder.role_probe"][0]  # [B, S, n_F], [B, S, n_R]
    binding = bindings["encoder.binding_probe"][0]  # [B, S, d_F, d_R]
    assert a_f.shape == (2, 4, 20) and a_r.shape == (2, 4, 10) and binding.shape == (2, 4, 8, 6)
    fill_dict, role_dict = encoder.filler_selection.dictionary, encoder.role_selection.dictionary
    with torch.no_grad():
        f = a_f @ fill_dict.t()  # F a_F: [B, S, d_F]
        r = a_r @ role_dict.t()  # R a_R: [B, S, d_R]
        torch.testing.assert_close(binding, f[..., :, None] * r[..., None, :])  # T^t = f ⊗ r
        torch.testing.assert_close(encoded.summary, binding.flatten(2).sum(1))  # T_S
        # step 0 from zero states; step 1's hidden input is ♭(T^0) (Eq. 13), with each LSTM's own cell
        words = encoder.embedding(src)
        zeros = torch.zeros(2, 48)
        h_f0, c_f0 = encoder.filler_lstm(words[:, 0], (zeros, zeros))
        h_r0, c_r0 = encoder.role_lstm(words[:, 0], (zeros, zeros))
        scores = encoder.filler_selection.scores(h_f0)
        torch.testing.assert_close(a_f[:, 0], torch.softmax(scores / 0.1, -1))
        assert not torch.allclose(a_f[:, 0], torch.softmax(scores, -1), atol=1e-3)  # the temperature matters
        torch.testing.assert_close(a_r[:, 0], torch.softmax(encoder.role_selection.scores(h_r0) / 0.1, -1))
        h_f1, _ = encoder.filler_lstm(words[:, 1], (binding[:, 0].flatten(1), c_f0))
        torch.testing.assert_close(a_f[:, 1], torch.softmax(encoder.filler_selection.scores(h_f1) / 0.1, -1))
    # padding: zero bindings and zero selection weights
    assert (binding[1, 2:] == 0).all() and (a_f[1, 2:] == 0).all() and (a_r[1, 2:] == 0).all()
    torch.testing.assert_close(a_f[0].sum(-1), torch.ones(4))


def test_authors_code_variant_adds_their_affine_pieces_and_their_start():
    """variant authors_code: f = F a + b_F, scores k . (W_a h), a biased memory projection; init authors:
    their init_weights. Equality with their model file: tests/benchmarks/test_parity_n2f.py."""
    torch.manual_seed(0)
    paper, model = model_of("tp_n2f"), model_of("tp_n2f", {"variant": "authors_code", "init": "authors"}).eval()
    extra = {name for name, _ in model.named_parameters()} - {name for name, _ in paper.named_parameters()}
    assert extra == {"encoder.filler_selection.dictionary_bias", "encoder.role_selection.dictionary_bias",
                     "decoder.attention.memory_projection.bias", "decoder.attention.query_projection.weight"}
    src, tgt_in, _ = copy_task(3, seed=1)
    with torch.no_grad(), capture(model, "filler_probe") as fillers, capture(model, "binding_probe") as bindings, \
            capture(model, "attention_probe") as attention:
        model(src, tgt_in)
        selection = model.encoder.filler_selection
        f = fillers["encoder.filler_probe"][0] @ selection.dictionary.t() + selection.dictionary_bias  # [B, S, d_F]
        binding = bindings["encoder.binding_probe"][0]  # [B, S, d_F, d_R]
        real = src != PAD
        ratio = binding[real][:, :, 0] / f[real]  # every filler row scaled by the same role entry
        torch.testing.assert_close(ratio, ratio[:, :1].expand_as(ratio))
        encoded, (hidden, cell), keys = model.encode(src)
        h_input, _ = model.decoder.cell(model.decoder.embed(tgt_in)[:, 0], (hidden, cell))
        scores = (keys @ model.decoder.attention.query_projection(h_input)[:, :, None]).squeeze(-1)
        expected = torch.softmax(scores.masked_fill(encoded.pad_mask, float("-inf")), -1)
        torch.testing.assert_close(attention["decoder.attention_probe"][0][:, 0], expected)
    for embedding in (model.encoder.embedding, model.decoder.relation_embedding, model.decoder.argument_embedding):
        assert embedding.weight.abs().max() <= 0.1
    readout = model.decoder.readout
    assert not readout.relation_head.bias.any() and not readout.argument_head.bias.any()
    assert not model.reasoning.layers[0].bias.any()
    cell = model.decoder.cell  # their Tuple-LSTM's input weights are an nn.Linear: +-1/sqrt(input width)
    assert cell.hidden_size ** -0.5 < cell.weight_ih.abs().max() <= cell.input_size ** -0.5
    duals = readout.unbinding.position_duals
    assert duals.min() >= 0 and duals.max() < 1
    for arch in ARCHS[1:]:  # every ablation builds under the variant and their start
        model_of(arch, {"variant": "authors_code", "init": "authors"})


# ---- padding ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["paper", "authors_code"])
@pytest.mark.parametrize("arch", ARCHS)
def test_appending_padding_to_the_source_changes_nothing(arch, variant):
    torch.manual_seed(0)
    model = model_of(arch, {"variant": variant}).eval()
    src, tgt_in, _ = copy_task(5, seed=3)
    padded = torch.cat([src, torch.full((5, 4), PAD)], dim=1)
    with torch.no_grad():
        a, b = model(src, tgt_in), model(padded, tgt_in)
        torch.testing.assert_close(a.relation, b.relation, rtol=0, atol=1e-5)
        torch.testing.assert_close(a.arguments, b.arguments, rtol=0, atol=1e-5)
        # a row encoded alone, without the batch's padding, scores the same
        length = int((src[0] != PAD).sum())
        alone = model(src[:1, :length], tgt_in[:1])
        torch.testing.assert_close(alone.relation, a.relation[:1], rtol=0, atol=1e-5)
    assert torch.equal(model.greedy_decode(src, 5), model.greedy_decode(padded, 5))
    with capture(model, "attention_probe") as attention, torch.no_grad():
        model(padded, tgt_in)
    weights = attention["decoder.attention_probe"][0]  # [B, T, S]
    assert weights.shape == (5, 4, 13)
    assert (weights[:, :, 9:] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, 4))


# ---- the tuple loss (Eq. 12) ------------------------------------------------------------------------------


def manual_tuple_losses(output: TupleLogits, tgt_out: torch.Tensor) -> torch.Tensor:
    """-log p(relation) - sum_i log p(arg_i) of each tuple: [B, T]."""
    rel = -output.relation.log_softmax(-1).gather(-1, tgt_out[..., :1]).squeeze(-1)
    args = -output.arguments.log_softmax(-1).gather(-1, tgt_out[..., 1:, None]).squeeze(-1).sum(-1)
    return rel + args


def test_loss_masks_pad_tuples_only_with_mask_padding():
    torch.manual_seed(0)
    src, tgt_in, tgt_out = copy_task(6, seed=4)
    real = tgt_out[..., 0] != REL_PAD
    assert 0 < int(real.sum()) < real.numel()
    masked, unmasked = model_of("tp_n2f"), model_of("tp_n2f", {"mask_padding": False})
    output = masked(src, tgt_in)
    expected = manual_tuple_losses(output, tgt_out)
    # with masking: only real tuples count; mean = total / real tuples
    torch.testing.assert_close(masked.target_loss(output, tgt_out, "sum"), expected[real].sum())
    torch.testing.assert_close(masked.target_loss(output, tgt_out, "mean"), expected[real].sum() / real.sum())
    # logits at pad positions do not matter
    scrambled = TupleLogits(output.relation.masked_fill(~real[..., None], 5.0),
                            output.arguments.masked_fill(~real[..., None, None], -3.0))
    torch.testing.assert_close(masked.target_loss(scrambled, tgt_out), masked.target_loss(output, tgt_out))
    # without masking: pad tuples are class-0 targets; mean = total / (B * T)
    torch.testing.assert_close(unmasked.target_loss(output, tgt_out, "sum"), expected.sum())
    torch.testing.assert_close(unmasked.target_loss(output, tgt_out, "mean"), expected.sum() / real.numel())
    assert unmasked.target_loss(output, tgt_out, "sum") > masked.target_loss(output, tgt_out, "sum")
    assert unmasked.target_loss(scrambled, tgt_out) != unmasked.target_loss(output, tgt_out)
    # the gradient reaches no logit of a pad tuple under masking
    logits = output.relation.detach().requires_grad_()
    masked.target_loss(TupleLogits(logits, output.arguments.detach()), tgt_out).backward()
    assert (logits.grad[~real] == 0).all() and (logits.grad[real] != 0).any()


# ---- training on a tiny task, greedy decoding ---------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_trains_on_a_tiny_copy_task_and_decodes(arch):
    torch.manual_seed(0)
    model = model_of(arch)
    src, tgt_in, tgt_out = copy_task(48, seed=5)
    assert_greedy_is_teacher_forced_argmax(model.eval(), src[:8], max_tuples=6)  # untrained
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model.train()
    losses = []
    for _ in range(200):
        optimizer.zero_grad()
        loss = model.target_loss(model(src, tgt_in), tgt_out)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first, last = losses[0], sum(losses[-10:]) / 10
    print(f"{arch}: loss {first:.3f} -> {last:.3f}")
    assert last < 0.2 * first
    model.eval()
    decoded = assert_greedy_is_teacher_forced_argmax(model, src, max_tuples=6)
    exact = 0
    for row in range(src.size(0)):
        length = int((tgt_out[row, :, 0] != REL_PAD).sum())
        exact += decoded.shape[1] >= length and torch.equal(decoded[row, :length], tgt_out[row, :length])
    print(f"{arch}: {exact}/48 training programs decoded exactly")
    assert exact >= 36  # measured: 48, 48, 44, 48 of 48


# ---- probes for analysis -----------------------------------------------------------------------------------


def test_probes_expose_unbinding_vectors_and_selections():
    model = model_of("tp_n2f").eval()
    src, tgt_in, _ = copy_task(3, seed=6)
    with torch.no_grad(), capture(model, "relation_probe") as rel, capture(model, "argument_probe") as args:
        out = model(src, tgt_in)
    relation = rel["decoder.readout.unbinding.relation_probe"]
    arguments = args["decoder.readout.unbinding.argument_probe"]
    assert len(relation) == 1 and relation[0].shape == (3, 4, 6)  # r'_rel [B, T, d_Rel]
    assert arguments[0].shape == (3, 4, 2, 6)  # a_i [B, T, K, d_Arg]
    head = model.decoder.readout.relation_head
    torch.testing.assert_close(out.relation, head(relation[0]))  # l_r = L_r r'_rel


# ---- presets, parameter counts, configuration --------------------------------------------------------------


def tp_n2f_count(vocab: int, n_rel: int, n_arg: int, d: int, e: int, n_f: int, n_r: int, d_f: int, d_r: int,
                 d_rel: int, d_arg: int, d_pos: int, k: int) -> int:
    d_t, d_h = d_f * d_r, d_arg * d_rel * d_pos
    lstm_cell = lambda d_in, h: 4 * h * (d_in + h) + 8 * h  # noqa: E731  (two bias vectors)
    encoder = vocab * d + 2 * lstm_cell(d, d_t) + (d_t + 1) * (n_f + n_r) + d_f * n_f + d_r * n_r
    reasoning = d_t * d_h + d_h
    decoder = (n_rel + n_arg) * e + lstm_cell((1 + k) * e, d_h) + d_t * d_h + 2 * d_h * d_h
    unbinding = k * d_pos + (d_arg * d_rel + 1) * d_rel + (d_rel + 1) * n_rel + (d_arg + 1) * n_arg
    return encoder + reasoning + decoder + unbinding


def lstm2lstm_count(vocab: int, n_rel: int, n_arg: int, d: int, e: int, h: int, k: int) -> int:
    encoder = vocab * d + 4 * h * (d + h) + 8 * h
    decoder = (n_rel + n_arg) * e + 4 * h * ((1 + k) * e + h) + 8 * h + 3 * h * h
    return encoder + decoder + (h + 1) * n_rel + k * (h + 1) * n_arg


def test_paper_presets_and_parameter_counts():
    presets = list_presets(task="n2f")
    assert {f"{a}_{s}" for a in ARCHS for s in ("mathqa", "algolisp", "tiny")} == set(presets)
    assert not set(presets) & set(list_presets())  # the default listing holds the sequence archs only
    mathqa, algolisp = presets["tp_n2f_mathqa"], presets["tp_n2f_algolisp"]
    keys = ("n_fillers", "n_roles", "d_filler", "d_role", "d_relation", "d_argument", "d_position", "tuple_arity")
    assert tuple(mathqa[k] for k in keys) == (150, 50, 30, 20, 20, 10, 5, 2)
    assert tuple(algolisp[k] for k in keys) == (150, 50, 30, 30, 30, 20, 5, 3)
    assert mathqa["reasoning_layers"] == 1 and mathqa["selection_temperature"] == 0.1
    for name in ("lstm2lstm", "tp2lstm", "lstm2tp"):
        assert presets[f"{name}_mathqa"]["lstm_hidden"] == 100  # one layer, one direction (N2FConfig)
    vocab, n_rel, n_arg = 5000, 60, 100
    counts = {}
    for name in sorted(presets):
        with torch.device("meta"):
            model = build_model(resolve_model_config(name, {}), vocab, PAD, n_relations=n_rel, n_arguments=n_arg)
        counts[name] = sum(p.numel() for p in model.parameters())
        print(f"{name}: {counts[name]:,} parameters (words {vocab}, relations {n_rel}, arguments {n_arg})")
    assert counts["tp_n2f_mathqa"] == tp_n2f_count(vocab, n_rel, n_arg, 128, 128, 150, 50, 30, 20, 20, 10, 5, 2)
    assert counts["tp_n2f_algolisp"] == tp_n2f_count(vocab, n_rel, n_arg, 128, 128, 150, 50, 30, 30, 30, 20, 5, 3)
    assert counts["lstm2lstm_mathqa"] == lstm2lstm_count(vocab, n_rel, n_arg, 128, 128, 100, 2)
    # TP-N2F's decoder state (d_H = 1000 for MathQA) dominates: its Tuple-LSTM and attention hold most weights
    assert counts["lstm2lstm_mathqa"] < counts["tp2lstm_mathqa"] < counts["lstm2tp_mathqa"] < counts["tp_n2f_mathqa"]
    assert math.isclose(counts["tp_n2f_mathqa"] / 1e6, 13.0, abs_tol=0.5)


@pytest.mark.parametrize("key, value, message", [
    ("d_filler", 0, "model.d_filler: must be a positive integer"),
    ("tuple_arity", 0, "model.tuple_arity: must be a positive integer"),
    ("reasoning_layers", 0, "model.reasoning_layers: must be a positive integer"),
    ("d_tuple_embedding", -1, "model.d_tuple_embedding: must be a positive integer"),
    ("selection_temperature", 0.0, "model.selection_temperature: must be > 0"),
    ("mask_padding", "yes", "model.mask_padding: expected bool"),
    ("variant", "authors", "model.variant: unknown variant 'authors'; known: paper, authors_code"),
    ("n_filers", 3, "model.n_filers: unknown setting"),
])
def test_validate_names_the_key(key, value, message):
    with pytest.raises(TpreproError, match=message):
        resolve_model_config("tp_n2f_tiny", {key: value})


def test_builder_errors_name_the_key():
    with pytest.raises(TpreproError, match="model.lstm_layers"):
        model_of("lstm2lstm", {"lstm_layers": 2})
    with pytest.raises(TpreproError, match="model.init: arch tp_n2f supports 'pytorch' and 'authors'"):
        model_of("tp_n2f", {"init": "paper_literal"})
    with pytest.raises(TpreproError, match="model.n_relations"):
        build_model(resolve_model_config("tp_n2f_tiny"), VOCAB, PAD, n_relations=2, n_arguments=N_ARG)
    with pytest.raises(TypeError):  # the tuple archs need their output sizes
        build_model(resolve_model_config("tp_n2f_tiny"), VOCAB, PAD)
    model = model_of("tp_n2f")
    with pytest.raises(TpreproError, match="tuple_arity = 2"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, 4, dtype=torch.long))


def test_arity_three_decodes_three_arguments():
    torch.manual_seed(0)
    model = model_of("lstm2tp", {"tuple_arity": 3}).eval()
    src, tgt_in, tgt_out = copy_task(4, seed=7, arity=3)
    out = model(src, tgt_in)
    assert out.arguments.shape == (4, 4, 3, N_ARG)
    assert torch.isfinite(model.target_loss(out, tgt_out))
    assert_greedy_is_teacher_forced_argmax(model, src, max_tuples=5)
