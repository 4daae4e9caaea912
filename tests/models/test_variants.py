"""The model variants: discrete roles (TPT-d), full tensor product, Universal Transformer, ACT, LSTM.

Equation-level checks on hand-computable tensors, then every preset's forward and backward
pass, padding invariance and cached decoding at shrunk sizes.
"""

import math

import pytest
import torch

from tprepro.errors import TpreproError
from tprepro.evaluate.decode import greedy_decode
from tprepro.evaluate.roles import role_sharpness, sharpness_metrics
from tprepro.models import build_model, list_presets, resolve_model_config
from tprepro.models.registry import preset_fields, setting_names
from tprepro.models.act import AdaptiveComputation
from tprepro.models.attention import MultiHeadAttention
from tprepro.models.probes import capture
from tprepro.models.tpr_bindings import DiscreteRoleBinding, FullTensorBinding
from tprepro.models.transformer import DecoderLayer, EncoderLayer
from training_kit import sequence_loss

from helpers import padded_batch

PAD, BOS, EOS, VOCAB = 0, 1, 2, 20


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def shrunk(preset: str) -> dict:
    """Overrides that make any preset tiny (d_role fits the discrete binding: d_model / n_heads), of
    the settings its arch has."""
    small = dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, d_role=8, n_roles=5,
                 ut_steps=2, act_max_steps=3, lstm_hidden=16, max_positions=64)
    names = setting_names(preset_fields(preset).get("arch", "tp_transformer"))
    return {key: value for key, value in small.items() if key in names}


def model_of(preset: str, seed: int = 0, **overrides):
    torch.manual_seed(seed)
    return build_model(resolve_model_config(preset, {**shrunk(preset), **overrides}), VOCAB, PAD).eval()


def batch(seed=0):
    """Sources of lengths 7, 4, 5 (right-padded) and targets [B=3, T=6] without padding."""
    return padded_batch(VOCAB, PAD, seed)


# ---- discrete roles (summarization paper, Eq. 4-6) ------------------------------------------------


def test_discrete_role_selection_by_hand():
    """H = 2, d_r = 1, N_r = 2: dictionary rows 2 and -3 normalise to 1 and -1, so with scores
    (s0, s1) a head's role is softmax(s) . [1, -1] = tanh((s0 - s1) / 2)."""
    binding = DiscreteRoleBinding(d_model=2, n_heads=2, n_roles=2, d_role=1)
    with torch.no_grad():
        binding.roles.copy_(torch.tensor([[2.0], [-3.0]]))
        # head 0 scores (f_a, 0); head 1 scores (0, f_b)
        binding.role_scores.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))
    f = torch.tensor([[[1.0, 2.0]]])  # [B=1, T=1, D=2]: the sub-layer output after the residual
    with torch.no_grad(), capture(binding, "role_probe") as probes:
        got = binding.bind_residual(f)
    r0, r1 = math.tanh(0.5), math.tanh(-1.0)
    torch.testing.assert_close(got, torch.tensor([[[1.0 * r0 + 1.0, 2.0 * r1 + 2.0]]]), rtol=0, atol=1e-6)
    attention = probes["role_probe"][0]  # [B, T, H, N_r]
    expected = torch.tensor([[1.0, 0.0], [0.0, 2.0]]).softmax(-1)
    torch.testing.assert_close(attention, expected[None, None], rtol=0, atol=1e-6)
    filler = torch.randn(1, 2, 1, 1)
    assert torch.equal(binding(filler, f), filler)  # nothing is bound before W^(o)


def test_discrete_roles_are_normalised_on_every_forward():
    torch.manual_seed(0)
    binding = DiscreteRoleBinding(d_model=8, n_heads=2, n_roles=5, d_role=4)
    f = torch.randn(2, 3, 8)
    with torch.no_grad():
        before = binding.bind_residual(f)
        binding.roles.mul_(torch.tensor([0.1, 3.0, 7.0, 0.5, 2.0])[:, None])  # rescale each row
        torch.testing.assert_close(binding.bind_residual(f), before, rtol=1e-6, atol=1e-6)
    with pytest.raises(TpreproError, match=r"model\.d_role"):
        DiscreteRoleBinding(d_model=8, n_heads=2, n_roles=5, d_role=3)


def test_discrete_roles_bind_the_sublayer_output_after_the_residual():
    """Encoder cell: h = z + MHA(LN(z)); the role attention is softmax(h W_r) and the FF reads TPR(h)."""
    torch.manual_seed(0)
    cfg = resolve_model_config("tpt_d_tiny", {"d_model": 8, "n_heads": 2, "d_role": 4, "n_roles": 3, "d_ff": 16})
    layer = EncoderLayer(cfg).eval()
    z, mask = torch.randn(2, 5, 8), torch.zeros(2, 5, dtype=torch.bool)
    with torch.no_grad(), capture(layer, "role_probe") as probes:
        got = layer(z, mask)
        h = z + layer.self_attn(layer.attn_norm(z), key_padding_mask=mask)  # [B, T, D]
        roles = (h @ layer.self_attn.binding.role_scores.weight.t()).view(2, 5, 2, 3).softmax(-1)
        dictionary = layer.self_attn.binding.roles / layer.self_attn.binding.roles.norm(dim=-1, keepdim=True)
        tpr = (roles @ dictionary).reshape(2, 5, 8) * h + h
        expected = layer.out_norm(tpr + layer.ff(layer.ff_norm(tpr)))
    torch.testing.assert_close(probes["self_attn.binding.role_probe"][0], roles, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_tpt_d_with_cancelling_roles_is_the_transformer():
    """Dictionary rows u, -u and zero scores give R = 0, so TPR(F) = F: the plain Transformer."""
    plain, tpt = model_of("transformer_tiny", seed=0), model_of("tpt_d_tiny", seed=1, n_roles=2)
    missing, unexpected = tpt.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and missing and all(".binding.role" in key for key in missing)
    with torch.no_grad():
        for module in tpt.modules():
            if isinstance(module, DiscreteRoleBinding):
                module.role_scores.weight.zero_()
                module.roles.copy_(torch.stack([torch.arange(8.0), -torch.arange(8.0)]))
        src, tgt = batch()
        torch.testing.assert_close(tpt(src, tgt), plain(src, tgt), rtol=1e-5, atol=1e-5)
        next(m for m in tpt.modules() if isinstance(m, DiscreteRoleBinding)).role_scores.weight[0::2].fill_(0.5)
        assert not torch.allclose(tpt(src, tgt), plain(src, tgt), atol=1e-3)


def test_role_sharpness_counts_real_positions_only():
    from tprepro.data.vocab import Vocab

    vocab = Vocab(("<pad>", "<s>", "</s>", "<unk>", *"0123456789+- ?Whatis"))
    model = build_model(resolve_model_config("tpt_d_tiny", {"n_roles": 3}), len(vocab), vocab.pad_id).eval()
    rows = [("What is 1+2?", "3"), ("What is 10-4?", "6"), ("1?", "12")]
    random_roles = role_sharpness(model, vocab, rows, batch_size=2)
    # 2 encoder self-attentions + 2 x 2 decoder attentions, 4 heads, per real token of each side
    src_tokens = sum(len(q) + 2 for q, _ in rows)
    tgt_tokens = sum(len(a) + 1 for _, a in rows)
    assert random_roles["role_distributions"] == 4 * (2 * src_tokens + 4 * tgt_tokens)
    per_layer = random_roles["per_layer"]
    assert list(per_layer) == ["enc0.self", "enc1.self", "dec0.self", "dec0.cross", "dec1.self", "dec1.cross"]
    assert all(per_layer[f"enc{i}.self"]["role_distributions"] == 4 * src_tokens for i in (0, 1))
    assert all(layer["role_distributions"] == 4 * tgt_tokens for key, layer in per_layer.items() if "dec" in key)
    sharp = sum(layer["role_sharpness"] * layer["role_distributions"] for layer in per_layer.values())
    assert sharp / random_roles["role_distributions"] == pytest.approx(random_roles["role_sharpness"])
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, DiscreteRoleBinding):
                module.role_scores.weight.zero_()  # uniform over 3 roles: max 1/3
    assert role_sharpness(model, vocab, rows, batch_size=2)["role_sharpness"] == 0.0
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, DiscreteRoleBinding):
                module.role_scores.weight[0::3].fill_(100.0)  # role 0 of every head dominates ...
    assert role_sharpness(model, vocab, rows, batch_size=3)["role_sharpness"] > 0.4  # ... where f sums > 0
    with torch.no_grad():  # only the first decoder cross-attention stays sharp
        for name, module in model.named_modules():
            if isinstance(module, DiscreteRoleBinding) and not name.startswith("decoder.0.cross_attn"):
                module.role_scores.weight.zero_()
    result = role_sharpness(model, vocab, rows, batch_size=3)
    shares = {key: layer["role_sharpness"] for key, layer in result["per_layer"].items()}
    assert shares.pop("dec0.cross") > 0.4 and set(shares.values()) == {0.0}
    metrics = sharpness_metrics(result)
    assert metrics["role_sharpness"] == result["role_sharpness"] and metrics["role_sharpness/enc1.self"] == 0.0
    assert len(metrics) == 7


def test_role_sharpness_names_shared_cells_by_step():
    from tprepro.data.vocab import Vocab

    vocab = Vocab(("<pad>", "<s>", "</s>", "<unk>", *"0123456789+- ?Whatis"))
    cfg = resolve_model_config("ut_tiny", {"binding": "discrete_role", "d_role": 16, "n_roles": 3, "ut_steps": 3})
    model = build_model(cfg, len(vocab), vocab.pad_id)
    result = role_sharpness(model, vocab, [("What is 1+2?", "3")], batch_size=1)
    assert list(result["per_layer"]) == ["enc0.self", "enc1.self", "enc2.self", "dec0.self", "dec0.cross",
                                         "dec1.self", "dec1.cross", "dec2.self", "dec2.cross"]


# ---- full tensor product (appendix A) -------------------------------------------------------------


def test_full_tensor_binding_by_hand():
    binding = FullTensorBinding(d_model=2, n_heads=1, d_role=3)
    with torch.no_grad():
        binding.role_proj.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))  # W^(r)
        binding.role_proj.bias.copy_(torch.tensor([0.0, 0.0, 1.0]))  # b^(r)
        x = torch.tensor([[[3.0, 4.0]]])  # [B, T, D]: r = [3, 4, 8]
        filler = torch.tensor([[[[1.0, 2.0]]]])  # [B, H, T, d_k]: v = [1, 2]
        got = binding(filler, x)
    assert binding.d_out == 6
    # v ⊗ r = [[1*3, 1*4, 1*8], [2*3, 2*4, 2*8]], row-major
    torch.testing.assert_close(got, torch.tensor([[[[3.0, 4.0, 8.0, 6.0, 8.0, 16.0]]]]), rtol=0, atol=0)


def test_full_tensor_attention_against_a_reference():
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=8, n_heads=2, binding="full_tensor", d_role=3).eval()
    assert mha.out_proj.in_features == 2 * 4 * 3  # H * d_k * d_r
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        got = mha(x)
        q, k, v = (proj(x).view(3, 5, 2, 4).transpose(1, 2) for proj in (mha.q_proj, mha.k_proj, mha.v_proj))
        filler = (q @ k.transpose(-1, -2) / 2.0).softmax(-1) @ v  # [B, H, T, d_k]
        role = mha.binding.role_proj(x).view(3, 5, 2, 3).transpose(1, 2)  # [B, H, T, d_r]
        outer = torch.einsum("bhti,bhtj->bhtij", filler, role)  # v̄ ⊗ r, [B, H, T, d_k, d_r]
        expected = mha.out_proj(outer.reshape(3, 2, 5, 12).transpose(1, 2).reshape(3, 5, 24))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


# ---- ACT (Graves 2016; Eq. 6-10 of Wangperawong) --------------------------------------------------


def hand_act(max_steps: int) -> AdaptiveComputation:
    """State [s, c]: every update adds 1 to s; the halting unit reads c only, h = sigmoid(c)."""
    act = AdaptiveComputation(d_model=2, max_steps=max_steps, epsilon=0.01)
    with torch.no_grad():
        act.halt.weight.copy_(torch.tensor([[0.0, 1.0]]))
        act.halt.bias.zero_()
    return act


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def add_one(state: torch.Tensor, n: int) -> torch.Tensor:
    return state + torch.tensor([1.0, 0.0])


def test_act_by_hand():
    """Position 0: h = 0.3 each update: sums 0.3, 0.6, 0.9, then 1.2 >= 0.99, so N = 4, R = 0.1,
    p = [0.3, 0.3, 0.3, 0.1]; s^n = n, output 0.3 + 0.6 + 0.9 + 0.4 = 2.2, ponder N + R = 4.1.
    Position 1: h = 0.995 >= 0.99 at once: N = 1, R = 1, output s^1 = 1. Position 2: padding."""
    act = hand_act(max_steps=10)
    state = torch.tensor([[[0.0, logit(0.3)], [0.0, logit(0.995)], [5.0, 0.0]]])  # [B=1, T=3, D=2]
    active = torch.tensor([[True, True, False]])
    with capture(act, "weight_probe") as weights, capture(act, "state_probe") as states:
        output, ponder, updates = act(state, active, add_one)
    torch.testing.assert_close(output[..., 0], torch.tensor([[2.2, 1.0, 0.0]]), rtol=0, atol=1e-5)
    torch.testing.assert_close(ponder, torch.tensor([[4.1, 2.0, 0.0]]), rtol=0, atol=1e-5)
    assert updates.tolist() == [[4.0, 1.0, 0.0]]
    p = torch.stack(weights["weight_probe"])  # [N, B, T]
    torch.testing.assert_close(p[:, 0, 0], torch.tensor([0.3, 0.3, 0.3, 0.1]), rtol=0, atol=1e-5)
    torch.testing.assert_close(p.sum(0), torch.tensor([[1.0, 1.0, 0.0]]), rtol=0, atol=1e-6)
    s = torch.stack(states["state_probe"])  # [N, B, T, D]
    assert s[:, 0, 1, 0].tolist() == [1.0, 1.0, 1.0, 1.0]  # halted after one update: frozen
    assert s[:, 0, 2, 0].tolist() == [5.0] * 4  # padding never changes


def test_act_step_cap_and_ponder_gradient():
    """Capped at 3 updates with h = 0.3: N = 3, R = 1 - 0.6 = 0.4, output 0.3 + 0.6 + 1.2 = 2.1.
    d(N + R)/d b_h = -2 h (1 - h) = -0.42 (R = 1 - 2 h); the position that halts at once adds 0."""
    act = hand_act(max_steps=3)
    state = torch.tensor([[[0.0, logit(0.3)], [0.0, logit(0.995)]]])
    output, ponder, updates = act(state, torch.ones(1, 2, dtype=torch.bool), add_one)
    assert updates.max() <= 3 and updates.tolist() == [[3.0, 1.0]]
    torch.testing.assert_close(output[0, 0, 0], torch.tensor(2.1), rtol=0, atol=1e-5)
    torch.testing.assert_close(ponder, torch.tensor([[3.4, 2.0]]), rtol=0, atol=1e-5)
    ponder.sum().backward()
    torch.testing.assert_close(act.halt.bias.grad, torch.tensor([-0.42]), rtol=0, atol=1e-5)


def test_act_model_invariants():
    model = model_of("aut_tiny", act_max_steps=5).train()
    src, tgt = batch()
    with capture(model, "weight_probe") as weights, capture(model, "state_probe") as states:
        logits = model(src, tgt)
    encoder_p = torch.stack(weights["encoder_act.weight_probe"])  # [N, B, S]
    torch.testing.assert_close(encoder_p.sum(0), (src != PAD).float(), rtol=0, atol=1e-5)
    decoder_p = torch.stack(weights["decoder_act.weight_probe"])  # [N, B, T]
    torch.testing.assert_close(decoder_p.sum(0), torch.ones(3, 6), rtol=0, atol=1e-5)
    assert encoder_p.size(0) <= 5 and decoder_p.size(0) <= 5
    s = torch.stack(states["encoder_act.state_probe"])  # [N, B, S, D]
    halted = encoder_p.cumsum(0) >= 1 - 1e-6  # [N, B, S]: halted at or before step n
    for n in range(1, s.size(0)):
        frozen = halted[n - 1]
        assert torch.equal(s[n][frozen], s[n - 1][frozen])  # a halted position stops changing
    loss = sequence_loss(logits, tgt, PAD) + model.auxiliary_loss()
    loss.backward()
    assert model.encoder_act.halt.weight.grad.abs().sum() > 0
    assert model.auxiliary_loss().requires_grad and not model.supports_cache


# ---- Universal Transformer ------------------------------------------------------------------------


def test_universal_transformer_shares_one_block():
    two, five = model_of("ut_tiny", ut_steps=2), model_of("ut_tiny", ut_steps=5)
    assert sum(p.numel() for p in two.parameters()) == sum(p.numel() for p in five.parameters())
    assert sum(isinstance(m, EncoderLayer) for m in five.modules()) == 1
    assert sum(isinstance(m, DecoderLayer) for m in five.modules()) == 1
    five.load_state_dict(two.state_dict())
    src, tgt = batch()
    with torch.no_grad(), capture(five, EncoderLayer) as enc, capture(five, DecoderLayer) as dec:
        out_five = five(src, tgt)
    assert len(enc["encoder_block"]) == 5 and len(dec["decoder_block"]) == 5  # one block, five calls
    with torch.no_grad():
        assert not torch.allclose(out_five, two(src, tgt), atol=1e-3)  # same weights, more steps


def test_universal_transformer_timing_signal():
    model = model_of("ut_tiny", d_model=4)
    table = model.timing  # [P, D] sinusoids
    torch.testing.assert_close(model.coordinates(1, 3, 2), table[3:5] + table[2])  # step n = 1 is the 2nd
    t = 2.0  # step 2: [sin 2, cos 2, sin(2/100), cos(2/100)]
    expected = torch.tensor([math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)])
    torch.testing.assert_close(table[2], expected, rtol=0, atol=1e-6)


# ---- every preset ---------------------------------------------------------------------------------

PRESETS = sorted(list_presets())
CACHED = [p for p in PRESETS if "aut" not in p]


def test_named_presets_exist():
    names = {"transformer_tiny", "tp_transformer_tiny", "wangperawong_transformer", "wangperawong_ut",
             "wangperawong_aut", "ut_tiny", "aut_tiny", "tpt_d_tiny", "tpt_d_paper", "full_tensor_tiny",
             "lstm_tiny", "saxton_simple_lstm"}
    assert names <= set(PRESETS)
    presets = list_presets()
    for name in ("wangperawong_transformer", "wangperawong_ut", "wangperawong_aut"):
        p = presets[name]
        assert (p["n_encoder_layers"], p["n_decoder_layers"], p["n_heads"], p["d_ff"], p["dropout"]) == (2, 2, 4, 128, 0.1)
    assert (presets["tpt_d_paper"]["n_roles"], presets["tpt_d_paper"]["d_role"]) == (50, 64)
    assert presets["wangperawong_aut"]["act_max_steps"] == 24 and presets["wangperawong_aut"]["act_epsilon"] == 0.01


def parameters_of(preset: str) -> int:
    with torch.device("meta"):
        model = build_model(resolve_model_config(preset, {}), 72, PAD)
    return sum(p.numel() for p in model.parameters())


def test_parameter_counts_of_variant_presets():
    # TPT-d = the Transformer plus, in each of 6 + 2 * 6 attentions, W_r (512 x 8 * 50) and the dictionary (50 x 64)
    assert parameters_of("tpt_d_paper") == parameters_of("transformer_paper") + 18 * (512 * 400 + 50 * 64)
    # Saxton's Simple LSTM has 18M weights (Table 1); the preset matches the budget
    assert round(parameters_of("saxton_simple_lstm") / 1e6) == 18
    # the UT shares one cell: 2 steps of it weigh as much as 1 + 1 Transformer layers
    one_layer = {"n_encoder_layers": 1, "n_decoder_layers": 1}
    with torch.device("meta"):
        transformer = build_model(resolve_model_config("transformer_tiny", one_layer), 72, PAD)
    assert parameters_of("ut_tiny") == sum(p.numel() for p in transformer.parameters())
    assert parameters_of("aut_tiny") == parameters_of("ut_tiny") + 2 * (64 + 1)  # two halting units


@pytest.mark.parametrize("preset", PRESETS)
def test_forward_and_backward(preset):
    model = model_of(preset).train()
    src, tgt = batch()
    logits = model(src, tgt)
    assert logits.shape == (3, 6, VOCAB)
    loss = sequence_loss(logits, tgt, PAD)
    auxiliary = getattr(model, "auxiliary_loss", None)
    if auxiliary is not None:
        loss = loss + auxiliary()
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
    assert any(param.grad.abs().sum() > 0 for param in model.parameters())


@pytest.mark.parametrize("preset", PRESETS)
def test_source_padding_does_not_change_outputs(preset):
    model = model_of(preset)
    src, tgt = batch()
    padded = torch.cat([src, torch.full((3, 3), PAD)], dim=1)
    with torch.no_grad():
        logits = model(src, tgt)
        torch.testing.assert_close(model(padded, tgt), logits, rtol=1e-5, atol=1e-5)
        alone = model(src[1:2, :4], tgt[1:2])
    torch.testing.assert_close(alone, logits[1:2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("preset", PRESETS)
def test_greedy_decoding_with_and_without_cache(preset):
    model, (src, _) = model_of(preset), batch()
    assert model.supports_cache == (preset in CACHED)
    cached = greedy_decode(model, src, BOS, EOS, max_len=8, use_cache=True)
    uncached = greedy_decode(model, src, BOS, EOS, max_len=8, use_cache=False)
    assert torch.equal(cached, uncached)
    if model.supports_cache:
        tgt = torch.randint(3, VOCAB, (3, 6), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            memory, src_mask = model.encode(src)
            full = model.decode(tgt, memory, src_mask)
            cache = model.new_cache()
            steps = [model.decode(tgt[:, :2], memory, src_mask, cache)]
            steps += [model.decode(tgt[:, t : t + 1], memory, src_mask, cache) for t in range(2, 6)]
        torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "preset,overrides,message",
    [
        ("tpt_d_tiny", {"d_role": 8}, r"^models\.m\.d_role: 8 \* n_heads=4 must equal d_model=64"),
        ("aut_tiny", {"act_epsilon": 1.0}, r"^models\.m\.act_epsilon: must be in \(0, 1\)"),
        ("aut_tiny", {"ponder_weight": -0.1}, r"^models\.m\.ponder_weight: must be >= 0"),
        ("ut_tiny", {"ut_steps": 0}, r"^models\.m\.ut_steps: must be a positive integer"),
        ("lstm_tiny", {"lstm_hidden": 0}, r"^models\.m\.lstm_hidden: must be a positive integer"),
        ("tpt_d_tiny", {"n_roles": 2.5}, r"^models\.m\.n_roles: expected int"),
    ],
)
def test_variant_config_errors_name_the_key(preset, overrides, message):
    with pytest.raises(TpreproError, match=message):
        resolve_model_config(preset, overrides, where="models.m")


def test_lstm_accepts_only_pytorch_init():
    with pytest.raises(TpreproError, match=r"model\.init: arch lstm supports only 'pytorch'"):
        build_model(resolve_model_config("lstm_tiny", {"init": "authors"}), VOCAB, PAD)
