"""Model config, presets, embedding (Eq. 2), the (TP-)Transformer and its probes."""

import math

import pytest
import torch

from tprepro.errors import TpreproError
from tprepro.models import build_model, list_presets, resolve_model_config
from tprepro.models.attention import MultiHeadAttention
from tprepro.models.probes import capture, record_attention
from tprepro.models.transformer import InputEmbedding, sinusoid_table

from helpers import padded_batch

PAD, VOCAB = 0, 20


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny(preset="tp_transformer_tiny", seed=0, **overrides):
    torch.manual_seed(seed)
    return build_model(resolve_model_config(preset, overrides), VOCAB, PAD).eval()


def batch(seed=0):
    """Sources of lengths 7, 4, 5 (right-padded) and targets [B=3, T=6] without padding."""
    return padded_batch(VOCAB, PAD, seed)


# ---- configuration ---------------------------------------------------------------------------


def test_presets():
    presets = list_presets()
    assert {"transformer_paper", "tp_transformer_paper", "transformer_tiny", "tp_transformer_tiny"} <= set(presets)
    paper = presets["tp_transformer_paper"]
    assert (paper["d_model"], paper["d_ff"], paper["n_heads"]) == (512, 2048, 8)
    assert (paper["n_encoder_layers"], paper["n_decoder_layers"], paper["dropout"]) == (6, 6, 0.0)
    for size in ("paper", "tiny"):
        tp, plain = presets[f"tp_transformer_{size}"], presets[f"transformer_{size}"]
        assert (tp["binding"], tp["role_embedding"]) == ("continuous_role", True)
        assert (plain["binding"], plain["role_embedding"]) == ("identity", False)
        differing = {key for key in tp if tp[key] != plain[key]}
        assert differing == {"arch", "binding", "role_embedding"}


def test_overrides_apply_and_coerce():
    cfg = resolve_model_config("tp_transformer_tiny", {"dropout": 0, "max_positions": 128})
    assert cfg.dropout == 0.0 and isinstance(cfg.dropout, float) and cfg.max_positions == 128
    assert cfg.d_model == 64 and resolve_model_config("tp_transformer_tiny", {}).max_positions == 512


@pytest.mark.parametrize(
    "preset,overrides,message",
    [
        ("tp_transformer_tiny", {"d_modle": 64}, r"^models\.tp\.d_modle: unknown setting 'd_modle'; did you mean 'd_model'\? \(known: arch, d_model, "),
        ("tp_transformer_tiny", {"d_model": "64"}, r"^models\.tp\.d_model: expected int, got str '64'"),
        ("tp_transformer_tiny", {"n_heads": True}, r"^models\.tp\.n_heads: expected int, got bool"),
        ("tp_transformer_tiny", {"role_embedding": 1}, r"^models\.tp\.role_embedding: expected bool"),
        ("tp_transformer_tiny", {"n_heads": 5}, r"^models\.tp\.d_model: 64 is not divisible by n_heads=5"),
        ("tp_transformer_tiny", {"binding": "tpr"}, r"^models\.tp\.binding: unknown binding 'tpr'.* \(known: "),
        ("tp_transformer_tiny", {"arch": "gru"}, r"^models\.tp\.arch: unknown arch 'gru'"),
        ("tp_transformer_tiny", {"dropout": 1.5}, r"^models\.tp\.dropout: must be in \[0, 1\)"),
        ("tp_transformer_tiny", {"d_ff": 0}, r"^models\.tp\.d_ff: must be a positive integer"),
        ("tp_transformer_huge", {}, r"^models\.tp\.preset: unknown preset 'tp_transformer_huge'.* \(known: "),
    ],
)
def test_config_errors_name_the_key(preset, overrides, message):
    with pytest.raises(TpreproError, match=message):
        resolve_model_config(preset, overrides, where="models.tp")


def paper_count(vocab: int, d: int, d_ff: int, layers: int, tp: bool) -> int:
    """Parameters by hand: E; W^(p), b^(p) (TP); per attention W_q,k,v,o (+ W_r for TP) with biases;
    FF (Eq. 7); 3 LayerNorms per encoder cell and 4 per decoder cell (Eq. 1, Sec. 2.3)."""
    linear = d * d + d
    attention = (5 if tp else 4) * linear
    ff = 2 * d * d_ff + d_ff + d
    norm = 2 * d
    encoder = attention + ff + 3 * norm
    decoder = 2 * attention + ff + 4 * norm
    return vocab * d + (linear if tp else 0) + layers * (encoder + decoder)


def test_parameter_counts_of_presets():
    counts = {}
    for name in list_presets():
        with torch.device("meta"):
            model = build_model(resolve_model_config(name, {}), 72, PAD)
        counts[name] = sum(p.numel() for p in model.parameters())
        print(f"{name}: {counts[name]:,} parameters (vocab 72)")
    assert counts["tp_transformer_paper"] == paper_count(72, 512, 2048, 6, tp=True) == 49_178_112
    assert counts["transformer_paper"] == paper_count(72, 512, 2048, 6, tp=False) == 44_187_648
    # Table 1 of the paper: 49.2M (TP-Transformer) and 44.2M (Transformer).
    assert round(counts["tp_transformer_paper"] / 1e6, 1) == 49.2
    assert round(counts["transformer_paper"] / 1e6, 1) == 44.2
    assert counts["tp_transformer_tiny"] == paper_count(72, 64, 256, 2, tp=True)
    assert counts["transformer_tiny"] == paper_count(72, 64, 256, 2, tp=False)


def test_authors_init_is_the_default():
    """init: authors (the authors' model files): E, W^(p) ~ N(0, 1/d_z), b^(p) = PyTorch's default + 1, the
    TP-Transformer's attention matrices (W^(q), W^(r), ...) at nn.Linear's default U(+-1/sqrt(fan_in)) as their
    file leaves them, Xavier-uniform elsewhere, biases at PyTorch's default U(+-1/sqrt(fan_in))."""
    torch.manual_seed(0)
    cfg = resolve_model_config("tp_transformer_paper", {"n_encoder_layers": 1, "n_decoder_layers": 1})
    assert cfg.init == "authors" and resolve_model_config("transformer_tiny").init == "authors"
    model = build_model(cfg, 72, PAD)
    std = 1 / math.sqrt(512)
    embedding = model.embedding.tokens.weight  # E: [72, 512]
    assert abs(embedding.mean().item()) < 0.002 and abs(embedding.std().item() / std - 1) < 0.02
    role = model.embedding.role  # W^(p), b^(p)
    assert abs(role.weight.mean().item()) < 0.001 and abs(role.weight.std().item() / std - 1) < 0.01
    assert (role.bias - 1).abs().max().item() <= std and abs(role.bias.mean().item() - 1) < 0.01
    for linear in (model.encoder[0].self_attn.q_proj, model.encoder[0].self_attn.binding.role_proj):
        assert 0.95 * std < linear.weight.abs().max().item() <= std  # nn.Linear's default bound, 1/sqrt(fan_in)
        assert 0.9 * std < linear.bias.abs().max().item() <= std  # nn.Linear's default bias, untouched
    expand = model.decoder[0].ff.expand.weight
    assert expand.abs().max().item() <= math.sqrt(6 / (512 + 2048)) * 1.0001


def test_paper_literal_init():
    """init: paper_literal (Sec. 4.1 read literally): E ~ N(0, 1), W^(p) ~ N(1, 1), zero biases."""
    torch.manual_seed(0)
    cfg = resolve_model_config("tp_transformer_paper",
                               {"n_encoder_layers": 1, "n_decoder_layers": 1, "init": "paper_literal"})
    model = build_model(cfg, 72, PAD)
    embedding = model.embedding.tokens.weight  # E: [72, 512]
    role = model.embedding.role.weight  # W^(p): [512, 512]
    assert abs(embedding.mean().item()) < 0.02 and abs(embedding.std().item() - 1) < 0.02
    assert abs(role.mean().item() - 1) < 0.01 and abs(role.std().item() - 1) < 0.01
    q = model.encoder[0].self_attn.q_proj
    bound = math.sqrt(6 / (512 + 512))  # Xavier-uniform
    assert q.weight.abs().max().item() <= bound and q.weight.abs().max().item() > 0.95 * bound
    assert q.bias.abs().max().item() == 0
    with pytest.raises(TpreproError, match=r"model\.init: unknown init 'paper' \('paper' is now 'paper_literal'\)"):
        resolve_model_config("tp_transformer_tiny", {"init": "paper"})


# ---- embedding (Eq. 2) -----------------------------------------------------------------------


def test_sinusoid_table():
    table = sinusoid_table(5, 4)
    t = 3
    expected = [math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)]  # 10000^(2/4) = 100
    torch.testing.assert_close(table[t], torch.tensor(expected), rtol=0, atol=1e-6)


def test_role_scaled_embedding_by_hand():
    embedding = InputEmbedding(vocab_size=3, d_model=2, max_positions=4, role_embedding=True)
    with torch.no_grad():
        embedding.tokens.weight.copy_(torch.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 0.0]]))  # rows: E x
        embedding.role.weight.copy_(torch.tensor([[1.0, 0.0], [1.0, 1.0]]))  # W^(p)
        embedding.role.bias.copy_(torch.tensor([0.0, -1.0]))  # b^(p)
        got = embedding(torch.tensor([[2, 0]]))
    r2 = math.sqrt(2)  # sqrt(d_z)
    # t = 0, symbol 2: p_0 = [sin 0, cos 0] = [0, 1]; e = [3 r2, 1]; r = [e_a, e_a + e_b - 1] = [3 r2, 3 r2]
    z0 = [3 * r2 * 3 * r2, 1 * 3 * r2]
    # t = 1, symbol 0: p_1 = [sin 1, cos 1]; e = [r2 + sin 1, 2 r2 + cos 1]
    e_a, e_b = r2 + math.sin(1), 2 * r2 + math.cos(1)
    z1 = [e_a * e_a, e_b * (e_a + e_b - 1)]
    torch.testing.assert_close(got, torch.tensor([[z0, z1]]), rtol=1e-6, atol=1e-5)


def test_too_long_sequence_is_a_clear_error():
    model = tiny(max_positions=8)
    with pytest.raises(TpreproError, match="max_positions"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))


# ---- the model -------------------------------------------------------------------------------


def test_both_archs_are_one_class_and_output_logits():
    tp, plain = tiny(), tiny("transformer_tiny")
    assert type(tp) is type(plain)
    src, tgt = batch()
    assert tp(src, tgt).shape == plain(src, tgt).shape == (3, 6, VOCAB)


def test_transformer_equals_tp_model_with_unit_roles():
    """Same weights; TP roles forced to ones (W = 0, b = 1) in every binding and in Eq. 2."""
    plain, tp = tiny("transformer_tiny", seed=0), tiny(seed=1)
    missing, unexpected = tp.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and missing and all(".role" in key for key in missing)
    with torch.no_grad():
        for name, param in tp.named_parameters():
            if name in missing:
                param.fill_(1.0 if name.endswith("bias") else 0.0)
    src, tgt = batch()
    with torch.no_grad():
        torch.testing.assert_close(tp(src, tgt), plain(src, tgt), rtol=1e-5, atol=1e-5)
        tp.embedding.role.bias.fill_(2.0)  # and the roles do matter
        assert not torch.allclose(tp(src, tgt), plain(src, tgt), atol=1e-3)


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny"])
def test_causality(preset):
    model = tiny(preset)
    src, tgt = batch()
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1 - 3) % (VOCAB - 3) + 3  # another symbol at position 4
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    torch.testing.assert_close(after[:, :4], before[:, :4], rtol=0, atol=1e-5)
    assert not torch.allclose(after[:, 4], before[:, 4], atol=1e-3)


# ---- probes ----------------------------------------------------------------------------------


def test_capture_role_vectors_and_attention_probabilities():
    model = tiny()
    src, tgt = batch()
    with torch.no_grad(), capture(model, "role_proj") as roles:
        model(src, tgt)
    # 2 encoder layers x 1 attention + 2 decoder layers x 2 attentions; [B, T, H*d_k] each call
    assert len(roles) == 6 and all(len(calls) == 1 for calls in roles.values())
    assert roles["encoder.0.self_attn.binding.role_proj"][0].shape == (3, 7, 64)
    assert roles["decoder.1.cross_attn.binding.role_proj"][0].shape == (3, 6, 64)

    with torch.no_grad(), record_attention(model), capture(model, "attention_probe") as probs:
        logits = model(src, tgt)
    assert not any(m.record_probs for m in model.modules() if isinstance(m, MultiHeadAttention))
    encoder = probs["encoder.0.self_attn.attention_probe"][0]  # [B, H, S, S]
    cross = probs["decoder.0.cross_attn.attention_probe"][0]  # [B, H, T, S]
    decoder = probs["decoder.0.self_attn.attention_probe"][0]  # [B, H, T, T]
    assert encoder.shape == (3, 4, 7, 7) and cross.shape == (3, 4, 6, 7) and decoder.shape == (3, 4, 6, 6)
    for p in (encoder, cross, decoder):
        torch.testing.assert_close(p.sum(-1), torch.ones(p.shape[:-1]))
    assert cross[1, :, :, 4:].abs().max() == 0  # padded source positions get no attention
    assert decoder.triu(1).abs().max() == 0  # causal
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt), logits, rtol=1e-5, atol=1e-5)  # SDPA path agrees

    with torch.no_grad(), capture(model, MultiHeadAttention) as outputs:
        model(src, tgt)
    assert len(outputs) == 6 and outputs["decoder.0.cross_attn"][0].shape == (3, 6, 64)


def test_a_model_exported_with_the_old_init_name_still_loads(tmp_path):
    """Models exported before the rename stored init 'paper'; they load (as paper_literal) with their weights."""
    from dataclasses import asdict

    from tprepro.data.vocab import SPECIALS, Vocab
    from tprepro.evaluate.evaluate import load_trained
    from tprepro.train.checkpoint import save_checkpoint

    vocab = Vocab((*SPECIALS, *"0123456789"))
    model = build_model(resolve_model_config("tp_transformer_tiny", {"init": "paper_literal"}), len(vocab), PAD)
    stored = {**asdict(model.cfg), "init": "paper"}
    save_checkpoint({"model": model.state_dict(), "model_config": stored, "vocab": vocab.state(), "step": 1,
                     "fingerprint": "old"}, tmp_path / "model.pt")
    loaded, _, _ = load_trained(tmp_path / "model.pt", torch.device("cpu"))
    assert loaded.cfg.init == "paper_literal"
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


# Every field a ModelConfig had before the family split (issue 11), as models exported then stored them.
FLAT_BEFORE_SPLIT = dict(ut_steps=6, act_max_steps=24, act_epsilon=0.01, ponder_weight=0.01, lstm_hidden=2048,
                         lstm_layers=1, n_fillers=150, d_filler=30, d_relation=20, d_argument=10, d_position=5,
                         tuple_arity=2, d_tuple_embedding=128, selection_temperature=0.1, reasoning_layers=1,
                         mask_padding=True)


@pytest.mark.parametrize("preset", ["tp_transformer_tiny", "aut_tiny", "lstm_tiny", "tp_n2f_tiny"])
def test_configs_round_trip_and_flat_ones_stored_before_the_family_split_load(preset):
    from dataclasses import asdict

    from tprepro.models.registry import flat_settings, stored_model_config

    cfg = resolve_model_config(preset)
    assert stored_model_config(asdict(cfg)) == cfg  # what model.pt stores now: nested
    flat = {**FLAT_BEFORE_SPLIT, **flat_settings(cfg)}  # every family's fields, as exported before
    assert stored_model_config(flat) == cfg
    assert (cfg.family is None) == (preset == "tp_transformer_tiny")


def test_a_family_setting_on_another_arch_is_named():
    with pytest.raises(TpreproError, match=r"^models\.t\.ut_steps: unknown setting 'ut_steps'.* of arch transformer$"):
        resolve_model_config("transformer_tiny", {"ut_steps": 3}, where="models.t")
    assert resolve_model_config("transformer_tiny", {"arch": "universal_transformer", "ut_steps": 3}).family.ut_steps == 3
