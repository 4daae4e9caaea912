"""Greedy decoding: the K/V-cached path equals re-running the decoder over the prefix."""

import pytest
import torch

from tprepro.evaluate.decode import greedy_decode
from tprepro.models import build_model, resolve_model_config

PAD, BOS, VOCAB = 0, 1, 24


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny(preset, seed=0):
    """A random model whose greedy outputs vary. With the default init the (tied) input
    embedding dominates the residual stream and a random model just repeats its input
    token; a small E, roles near 1 in Eq. 2 and larger projections spread the predictions."""
    torch.manual_seed(seed)
    model = build_model(resolve_model_config(preset, {}), VOCAB, PAD).eval()
    with torch.no_grad():
        model.embedding.tokens.weight.normal_(0.0, 0.1)
        for name, module in model.named_modules():
            if name == "embedding.role":
                module.weight.normal_(0.0, 0.3)
                module.bias.fill_(1.0)
            elif isinstance(module, torch.nn.Linear):
                module.weight.mul_(2.0)
    return model


def sources(seed=0):
    """A batch of 4 sources with lengths 9, 3, 6, 1 (right-padded)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, VOCAB, (4, 9), generator=g)
    for row, length in enumerate([9, 3, 6, 1]):
        src[row, length:] = PAD
    return src


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny"])
@pytest.mark.parametrize("seed", [0, 1])
def test_cached_and_uncached_greedy_decoding_agree(preset, seed):
    model, src = tiny(preset, seed), sources(seed)
    cached = greedy_decode(model, src, BOS, eos_id=2, max_len=15, use_cache=True)
    uncached = greedy_decode(model, src, BOS, eos_id=2, max_len=15, use_cache=False)
    assert cached.shape[0] == 4 and cached.shape[1] <= 15
    assert torch.equal(cached, uncached)
    if preset == "tp_transformer_tiny":
        assert cached.unique().numel() > 8  # not a degenerate constant output


def test_eos_stops_rows_and_pads_after_it():
    model, src = tiny("tp_transformer_tiny"), sources()
    free = greedy_decode(model, src, BOS, eos_id=-1, max_len=12)  # never ends
    eos = int(free[1, 3])  # a symbol that row 1 emits at step 4 (some rows emit it earlier or never)
    cuts = [row.index(eos) + 1 if eos in row else len(row) for row in free.tolist()]
    length = max(cuts)  # decoding stops once every row has ended
    expected = [row[:cut] + [PAD] * (length - cut) for row, cut in zip(free.tolist(), cuts)]
    for use_cache in (True, False):
        out = greedy_decode(model, src, BOS, eos_id=eos, max_len=12, use_cache=use_cache)
        assert out.tolist() == expected


def test_stops_early_when_every_row_has_ended():
    model, src = tiny("transformer_tiny"), sources()
    first = greedy_decode(model, src[:1], BOS, eos_id=2, max_len=10)
    out = greedy_decode(model, src[:1], BOS, eos_id=int(first[0, 0]), max_len=10)
    assert out.shape == (1, 1)


def test_incremental_logits_equal_full_prefix_logits():
    model, src = tiny("tp_transformer_tiny"), sources()
    tgt = torch.randint(3, VOCAB, (4, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)  # [B, T, V]
        cache = model.new_cache()
        prefill = model.decode(tgt[:, :3], memory, src_mask, cache)  # several positions at once
        steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache) for t in range(3, 8)]
    assert cache.length == 8
    torch.testing.assert_close(torch.cat([prefill, *steps], dim=1), full, rtol=1e-5, atol=1e-4)


def test_decoding_restores_training_mode():
    model = tiny("transformer_tiny").train()
    greedy_decode(model, sources(), BOS, eos_id=2, max_len=3)
    assert model.training
