"""The interpretation analyses (issue 12) recover structure planted into real models and data.

Planting uses forward hooks registered before the analysis' own: a hook that returns a tensor
replaces the module's output for the rest of the forward pass and for every later hook, so each
analysis reads the planted values through the same hooks and passes as on a trained model.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from helpers import write_dataset
from tprepro.data.batching import collate
from tprepro.data.shards import open_dataset
from tprepro.experiments.n2f.tuple_vocab import build_tuple_vocab
from tprepro.data.vocab import SPECIALS, Vocab
from tprepro.evaluate.roles import role_sharpness
from tprepro.interpret import attention_maps, head_reconstruction, one_hotness, ponder_maps, role_clusters
from tprepro.interpret import unbinding_clusters
from tprepro.interpret.sampling import reservoir, sample_rows
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import build_model

VOCAB = Vocab(SPECIALS + tuple(sorted(set("What is 0123456789+-?"))))
ROWS = [(f"What is {a} + {b}?", str(a + b)) for a, b in [(1, 2), (13, 45), (7, 80), (22, 3), (905, 61), (4, 4)]]


def model_of(preset: str, **overrides):
    torch.manual_seed(0)
    cfg = resolve_model_config(preset, overrides, where=preset)
    return build_model(cfg, **VOCAB.model_sizes()).eval()


@contextlib.contextmanager
def planted(model, name: str, values):
    """Replace the output of submodule `name` by `values(output)` during the block."""
    handle = dict(model.named_modules())[name].register_forward_hook(lambda _m, _i, out: values(out))
    try:
        yield
    finally:
        handle.remove()


def character_class(symbol: str) -> int:
    return 0 if symbol.isdigit() else 1 if symbol.isalpha() else 2


def test_role_clusters_recover_roles_planted_by_character_class():
    model = model_of("tp_transformer_tiny")
    src = collate(ROWS, VOCAB).src  # [B, S]
    symbols = [[VOCAB.symbols[i] for i in row] for row in src.tolist()]
    groups = torch.tensor([[character_class(s) for s in row] for row in symbols])  # [B, S]
    centres = torch.randn(3, 16) * 5  # one role vector per class, head 0 (d_k = 16)
    noise = torch.randn(*src.shape, 16) * 0.01

    def roles(out):  # [B, S, H * d_k]: head 0 carries the planted roles
        out = out.clone()
        out[..., :16] = centres[groups] + noise
        return out

    with planted(model, "encoder.1.self_attn.binding.role_proj", roles):
        result = role_clusters.cluster_roles(model, VOCAB, ROWS, layer=-1, head=0, k=3, seed=1)
    real = src != VOCAB.pad_id
    found = [label for row in result.labels for label in row]
    assert adjusted_rand_score(groups[real].tolist(), found) == 1.0
    assert result.characters[0] == ["<s>", *"What is 1 + 2?", "</s>"]
    table = role_clusters.cluster_table(result)
    assert table["size"].sum() == int(real.sum()) and len(table) == 3
    digits = table[table["characters"].str.contains("'1'")]
    assert len(digits) == 1 and "'W'" not in digits["characters"].item()


def test_role_clusters_only_for_models_with_role_vectors():
    assert role_clusters.has_role_vectors(model_of("tp_transformer_tiny"), -1)
    assert not role_clusters.has_role_vectors(model_of("transformer_tiny"), -1)


def test_hand_set_one_hot_attention_shows_in_the_expected_cells():
    model = model_of("transformer_tiny")
    rows = ROWS[:2]

    def shift(out):  # [B, H, T_q, T_k]: every query of every head attends to key (q + 1) mod T_k
        t_q, t_k = out.shape[-2:]
        one_hot = torch.zeros(t_q, t_k)
        one_hot[torch.arange(t_q), (torch.arange(t_q) + 1) % t_k] = 1.0
        return one_hot.expand_as(out).clone()

    with planted(model, "encoder.1.self_attn.attention_probe", shift), \
            planted(model, "decoder.1.cross_attn.attention_probe", shift):
        maps = attention_maps.attention_maps(model, VOCAB, rows, head=2)
    assert [(m.example, m.kind) for m in maps] == [(0, "encoder self-attention"), (0, "decoder cross-attention"),
                                                   (1, "encoder self-attention"), (1, "decoder cross-attention")]
    encoder, cross = maps[0], maps[1]
    assert encoder.cols == encoder.rows == ["<s>", *"What is 1 + 2?", "</s>"]
    assert cross.rows == ["3", "</s>"] and cross.cols == encoder.cols
    assert encoder.module == "encoder.1.self_attn" and cross.module == "decoder.1.cross_attn"
    weights = np.asarray(encoder.weights)
    assert weights.shape == (16, 16)
    assert all(weights[i, i + 1] == 1.0 for i in range(15)) and weights.sum() == 15.0  # row 15 wraps past padding
    assert np.asarray(cross.weights).tolist() == np.eye(2, 16, k=1).tolist()


def test_attention_maps_of_a_universal_transformer_read_its_shared_cell():
    maps = attention_maps.attention_maps(model_of("aut_tiny"), VOCAB, ROWS[:1], head=0)
    assert maps[0].module == "encoder_block.self_attn" and maps[1].module == "decoder_block.cross_attn"
    assert np.allclose(np.asarray(maps[0].weights).sum(axis=1), 1.0, atol=1e-5)


def test_affine_value_maps_reconstruct_exactly_and_random_ones_do_not():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(400, 3, 4))  # [N, H, d_k]
    groups = np.repeat(np.arange(40), 10)  # 40 problems of 10 positions
    states = values[:, 0] @ rng.normal(size=(4, 8)) + rng.normal(size=8)  # exactly affine in head 0
    errors = head_reconstruction.reconstruction_mse(values, states, groups, test_fraction=0.25, seed=1)
    assert errors[0] < 1e-20
    assert min(errors[1:]) > 0.5  # heads 1 and 2 are independent of the states


def test_a_single_head_value_map_of_a_real_model_reconstructs_the_encoder_state():
    """With one head, v_h = W z + b with W square and invertible: the affine map back is exact."""
    model = model_of("transformer_tiny", n_heads=1)
    rows = [(f"What is {a} - {b}?", str(a - b)) for a in range(12) for b in range(0, 60, 7)]
    values, states, groups = head_reconstruction.head_values(model, VOCAB, rows, decoder_layer=0)
    src = collate(rows, VOCAB).src
    memory, _ = model.encode(src)
    assert np.allclose(states, memory[src != VOCAB.pad_id].detach().numpy(), atol=1e-6)
    assert values.shape == (len(states), 1, 64) and len(np.unique(groups)) == len(rows)
    errors = head_reconstruction.reconstruction_mse(values, states, groups, test_fraction=0.25, seed=1)
    assert errors[0] < 1e-6 < np.var(states)
    four = model_of("transformer_tiny")
    errors = head_reconstruction.reconstruction_mse(*head_values_of(four, rows), test_fraction=0.25, seed=1)
    assert errors.shape == (4,) and errors.min() > 1e-4  # a 16-wide head cannot carry a 64-wide state


def head_values_of(model, rows):
    return head_reconstruction.head_values(model, VOCAB, rows, decoder_layer=0)


def test_reconstruction_table_has_a_row_per_model_and_the_mean():
    table = head_reconstruction.mse_table({"transformer-s1": np.array([0.1, 0.3]), "tp-s1": np.array([0.2, 0.2])})
    assert table.columns.tolist() == ["model", "head_0", "head_1", "mean"]
    assert table["mean"].round(6).tolist() == [0.2, 0.2]


def test_planted_unbinding_vectors_come_back_in_their_groups():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 6)) * 10
    truth = np.repeat(np.arange(4), 3)  # 12 operators, 3 per group
    means = centres[truth] + rng.normal(size=(12, 6)) * 0.1
    labels, coords = unbinding_clusters.cluster_operators(means, k=4, seed=1)
    assert adjusted_rand_score(truth, labels) == 1.0
    assert coords.shape == (12, 2)


def test_unbinding_vectors_of_a_tp_n2f_decoder_are_averaged_per_gold_operator():
    ops = ["add", "subtract", "multiply", "divide", "sqrt", "volume"]
    rows = [(f"q {i} w{i % 3}", " | ".join(f"{ops[(i + j) % 6]} n0 n1" for j in range(1 + i % 3))) for i in range(12)]
    vocab = build_tuple_vocab(rows, arity=2)
    torch.manual_seed(0)
    cfg = resolve_model_config("tp_n2f_tiny", {}, where="tp_n2f")
    model = build_model(cfg, **{k: v for k, v in vocab.model_sizes().items()}).eval()
    gold = vocab.collate(rows).tgt_out[..., 0]  # [B, T]
    groups = {"add": 0, "subtract": 0, "multiply": 1, "divide": 1, "sqrt": 2, "volume": 2}
    planted_vectors = {vocab.relations.index(op): torch.full((cfg.family.d_relation,), 5.0 * g) + 0.01 * k
                       for k, (op, g) in enumerate(groups.items())}

    def by_gold_relation(out):  # [B, T, d_Rel]: the planted vector of the relation each step should produce
        out = out.clone()
        for rel, vector in planted_vectors.items():
            out[gold == rel] = vector
        return out

    with planted(model, unbinding_clusters.PROBE, by_gold_relation):
        names, means, counts = unbinding_clusters.relation_means(model, vocab, rows, batch_size=len(rows))
    assert sorted(names) == sorted(ops) and sum(counts) == int((gold > 3).sum())
    for name, mean in zip(names, means):
        assert np.allclose(mean, planted_vectors[vocab.relations.index(name)].numpy(), atol=1e-6)
    labels, _ = unbinding_clusters.cluster_operators(means, k=3, seed=1)
    assert adjusted_rand_score([groups[n] for n in names], labels) == 1.0


def test_one_hotness_per_sublayer_of_hand_set_sharp_and_flat_role_attention():
    model = model_of("tpt_d_tiny")
    bindings = [m.self_attn.binding for m in model.encoder]
    with torch.no_grad():
        bindings[0].role_scores.weight.mul_(1e4)  # encoder layer 0: sharp
        bindings[1].role_scores.weight.zero_()  # encoder layer 1: uniform over the 50 roles
    table, histograms = one_hotness.one_hotness(model, VOCAB, ROWS, batch_size=4, bins=10)
    rows = {(r["layer"], r["attention"]): r for r in table.to_dict("records")}
    assert list(rows) == [("enc0", "self"), ("enc1", "self"), ("dec0", "self"), ("dec0", "cross"),
                          ("dec1", "self"), ("dec1", "cross")]  # model order
    assert rows[("enc0", "self")]["share_above"] > 0.95
    assert rows[("enc1", "self")]["share_above"] == 0.0
    flat = histograms["enc1.self"]
    assert flat[0] == flat.sum() == rows[("enc1", "self")]["distributions"]  # all maxima are 1/50
    overall = role_sharpness(model, VOCAB, ROWS, batch_size=4)
    assert overall["role_distributions"] == table["distributions"].sum()
    assert overall["role_sharpness"] == pytest.approx((table["share_above"] * table["distributions"]).sum()
                                                      / table["distributions"].sum())


@pytest.mark.parametrize("bias, expected", [(100.0, 1), (0.0, 2), (-100.0, 4)])
def test_ponder_maps_count_the_updates_set_by_the_halting_unit(bias, expected):
    model = model_of("aut_tiny")  # act_max_steps 4
    with torch.no_grad():
        model.encoder_act.halt.weight.zero_()
        model.encoder_act.halt.bias.fill_(bias)  # h = 1: halt at once; 0.5: at the second; 0: at the cap
    symbols, updates = ponder_maps.encoder_updates(model, VOCAB, ROWS)
    assert [len(u) for u in updates] == [len(s) for s in symbols] == [len(q) + 2 for q, _ in ROWS]
    assert {n for u in updates for n in u} == {expected}
    table = ponder_maps.mean_by_type(["a+b", "a+a", "a+b", "a+b", "a+a", "a+a"], updates)
    assert table.to_dict("records") == [{"type": "a+a", "problems": 3, "mean_updates": float(expected)},
                                        {"type": "a+b", "problems": 3, "mean_updates": float(expected)}]


def test_samples_are_streamed_seeded_and_in_file_order(tmp_path):
    from helpers import arithmetic_rows

    dataset = open_dataset(write_dataset(tmp_path / "d", arithmetic_rows(230, seed=1), rows_per_shard=50))
    first = sample_rows(dataset, 20, seed="1:x")
    assert first == sample_rows(dataset, 20, seed="1:x") != sample_rows(dataset, 20, seed="2:x")
    questions = [r["question"] for r in arithmetic_rows(230, seed=1)]
    positions = [questions.index(r["question"]) for r in first]
    assert positions == sorted(positions) and max(positions) >= 50  # drawn beyond the first shard
    assert len(reservoir(iter(range(5)), 20, seed=1)) == 5


def test_params_name_the_key_of_an_interpreted_module_outside_the_grid(tmp_path):
    from helpers import load_default_params, write_params
    from tprepro.params import load_params
    from tprepro.errors import TpreproError

    params = load_default_params()
    params["interpret"]["module"] = "arithmetic__mixed"
    with pytest.raises(TpreproError, match=r"params.yaml: interpret.module: 'arithmetic__mixed' is not in grid"):
        load_params(write_params(tmp_path / "params.yaml", params))
    params = load_default_params()
    params["n2f"]["interpret"]["unbinding"]["model"] = "tp_n2f_big"
    with pytest.raises(TpreproError, match=r"n2f.interpret.unbinding.model: .tp_n2f_big. is not in n2f.models"):
        load_params(write_params(tmp_path / "params.yaml", params))


def test_every_figure_is_written(tmp_path):
    """The figure writers run on real analysis output (PNG files, atomically written)."""
    model = model_of("tp_transformer_tiny")
    result = role_clusters.cluster_roles(model, VOCAB, ROWS, layer=-1, head=0, k=3, seed=1)
    role_clusters.cluster_figure(result, tmp_path / "roles.png", "roles")
    attention_maps.attention_figure(attention_maps.attention_maps(model, VOCAB, ROWS[:2], 0), tmp_path / "att.png", "a")
    table = head_reconstruction.mse_table({"a": np.array([0.1, 0.2]), "b": np.array([0.3, 0.1])})
    head_reconstruction.mse_figure(table, tmp_path / "mse.png", "Head reconstruction")
    aut = model_of("aut_tiny")
    symbols, updates = ponder_maps.encoder_updates(aut, VOCAB, ROWS)
    ponder_maps.ponder_figure(symbols, updates, 4, tmp_path / "ponder.png", "p")
    table, histograms = one_hotness.one_hotness(model_of("tpt_d_tiny"), VOCAB, ROWS, batch_size=4, bins=10)
    one_hotness.one_hotness_figure(histograms, table, tmp_path / "onehot.png", "o")
    labels, coords = unbinding_clusters.cluster_operators(np.eye(4), k=2, seed=1)
    unbinding_clusters.cluster_figure(["a", "b", "c", "d"], labels, coords, tmp_path / "unbinding.png", "u")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["att.png", "mse.png", "onehot.png", "ponder.png", "roles.png", "unbinding.png"]
    assert all((tmp_path / name).read_bytes().startswith(b"\x89PNG") for name in written)


def test_only_multi_head_attention_models_have_attention_maps():
    assert attention_maps.has_attention_maps(model_of("ut_tiny"))
    assert not attention_maps.has_attention_maps(model_of("lstm_tiny"))
    assert not head_reconstruction.supports_reconstruction(model_of("lstm_tiny"))


def test_the_unbinding_cluster_figure_names_its_clusters_and_prints_no_label_over_another():
    """A legend row per k-means cluster with its size; operators at (nearly) one point share one label."""
    names = ["add", "subtract", "multiply", "divide"]
    coords = np.array([[0.0, 0.0], [0.0, 0.001], [1.0, 1.0], [-1.0, 0.5]])
    labels = np.array([0, 0, 1, 2])
    figure = unbinding_clusters.draw_clusters(names, labels, coords, "title")
    (ax,) = figure.axes
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["cluster 0 (2)", "cluster 1 (1)",
                                                                          "cluster 2 (1)"]
    assert sorted(text.get_text() for text in ax.texts) == ["add, subtract", "divide", "multiply"]
