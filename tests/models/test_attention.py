"""TP-Multi-Head Attention (Eq. 3-6) against hand arithmetic and a reference implementation."""

import math

import pytest
import torch
import torch.nn.functional as F

from tprepro.models.attention import KVCache, MultiHeadAttention
from tprepro.models.probes import capture, record_attention


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def hand_attention(binding: str) -> MultiHeadAttention:
    """1 head, d_model = 2: W_q = W_k = W_v = I, b_v = [0, 1], W_o = [[1, 1], [0, 1]], b_o = [0.5, 0];
    for the role binding W_r = diag(2, 3), b_r = [1, 0]."""
    mha = MultiHeadAttention(d_model=2, n_heads=1, binding=binding)
    with torch.no_grad():
        for proj in (mha.q_proj, mha.k_proj, mha.v_proj):
            proj.weight.copy_(torch.eye(2))
            proj.bias.zero_()
        mha.v_proj.bias.copy_(torch.tensor([0.0, 1.0]))
        mha.out_proj.weight.copy_(torch.tensor([[1.0, 1.0], [0.0, 1.0]]))
        mha.out_proj.bias.copy_(torch.tensor([0.5, 0.0]))
        if binding == "continuous_role":
            mha.binding.role_proj.weight.copy_(torch.tensor([[2.0, 0.0], [0.0, 3.0]]))
            mha.binding.role_proj.bias.copy_(torch.tensor([1.0, 0.0]))
    return mha


X = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # [B=1, T=2, D=2]

# By hand: q_t = k_t = x_t, so q_0.k = [1, 0] and q_1.k = [0, 1]; scaled by 1/sqrt(d_k) = 1/sqrt(2)
# and softmaxed, row 0 puts a = e^s / (e^s + 1), s = 1/sqrt(2), on key 0 and 1 - a on key 1; row 1
# the reverse. v_0 = [1, 1], v_1 = [0, 2], so the fillers (Eq. 4) are
#   f_0 = a v_0 + (1 - a) v_1 = [a, 2 - a],   f_1 = (1 - a) v_0 + a v_1 = [1 - a, 1 + a].
# Roles (Eq. 3): r_0 = diag(2, 3) [1, 0] + [1, 0] = [3, 0],  r_1 = diag(2, 3) [0, 1] + [1, 0] = [1, 3].
# Output (Eq. 6): W_o [u, w] + b_o = [u + w + 0.5, w].
S = 1 / math.sqrt(2)
A = math.exp(S) / (math.exp(S) + 1)


def out(u: float, w: float) -> list[float]:
    return [u + w + 0.5, w]


CASES = {
    # (binding, causal, pad key 1): expected [T=2, D=2]
    ("identity", False, False): [out(A, 2 - A), out(1 - A, 1 + A)],  # [2.5, 2 - a], [2.5, 1 + a]
    ("continuous_role", False, False): [out(3 * A, 0.0), out(1 - A, 3 * (1 + A))],
    # causal: row 0 sees only key 0, f_0 = v_0 = [1, 1]
    ("identity", True, False): [out(1.0, 1.0), out(1 - A, 1 + A)],
    ("continuous_role", True, False): [out(3.0, 0.0), out(1 - A, 3 * (1 + A))],
    # key 1 padded: both rows get f = v_0 = [1, 1]
    ("identity", False, True): [out(1.0, 1.0), out(1.0, 1.0)],
    ("continuous_role", False, True): [out(3.0, 0.0), out(1.0, 3.0)],
}


@pytest.mark.parametrize("binding,causal,pad", list(CASES))
@pytest.mark.parametrize("explicit", [False, True])
def test_hand_computed_example(binding, causal, pad, explicit):
    mha = hand_attention(binding)
    mask = torch.tensor([[False, pad]])
    with torch.no_grad():
        if explicit:
            with record_attention(mha):
                got = mha(X, key_padding_mask=mask, causal=causal)
        else:
            got = mha(X, key_padding_mask=mask, causal=causal)
    torch.testing.assert_close(got, torch.tensor([CASES[binding, causal, pad]]), rtol=0, atol=1e-6)


def reference(mha, x, source, key_padding_mask, causal):
    """torch's own multi-head attention with the same weights; also returns the probabilities."""
    t_q, t_k = x.size(1), source.size(1)
    attn_mask = torch.ones(t_q, t_k, dtype=torch.bool).triu(1) if causal else None  # True = blocked
    result, probs = F.multi_head_attention_forward(
        x.transpose(0, 1), source.transpose(0, 1), source.transpose(0, 1),
        mha.q_proj.in_features, mha.n_heads,
        torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]),
        torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]),
        None, None, False, 0.0, mha.out_proj.weight, mha.out_proj.bias,
        training=False, key_padding_mask=key_padding_mask, need_weights=True,
        attn_mask=attn_mask, average_attn_weights=False,
    )  # fmt: skip
    return result.transpose(0, 1), probs


@pytest.mark.parametrize("kind", ["self", "self_causal", "cross"])
@pytest.mark.parametrize("masked", [False, True])
def test_identity_binding_is_plain_multi_head_attention(kind, masked):
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=16, n_heads=4, binding="identity").eval()
    x = torch.randn(3, 5, 16)  # [B, T_q, D]
    source = x if kind != "cross" else torch.randn(3, 7, 16)  # [B, T_k, D]
    pad = torch.zeros(3, source.size(1), dtype=torch.bool)
    if masked:
        pad[0, -2:] = pad[2, -1:] = True
    mask = pad if masked else None
    causal = kind == "self_causal"
    kv = source if kind == "cross" else None  # None: self-attention
    with torch.no_grad():
        expected, expected_probs = reference(mha, x, source, mask, causal)
        got = mha(x, kv, key_padding_mask=mask, causal=causal)
        with record_attention(mha), capture(mha, "attention_probe") as probes:
            got_explicit = mha(x, kv, key_padding_mask=mask, causal=causal)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_explicit, got, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(probes["attention_probe"][0], expected_probs, rtol=1e-5, atol=1e-6)


def test_role_binding_explicit_path_equals_sdpa_and_reference():
    torch.manual_seed(1)
    mha = MultiHeadAttention(d_model=12, n_heads=3, binding="continuous_role").eval()
    x, memory = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    with torch.no_grad():
        fast = mha(x, memory, key_padding_mask=pad)
        with record_attention(mha):
            explicit = mha(x, memory, key_padding_mask=pad)
        # Reference: plain attention per head, times the role, then W_o.
        q = mha.q_proj(x).view(2, 4, 3, 4).transpose(1, 2)
        k = mha.k_proj(memory).view(2, 6, 3, 4).transpose(1, 2)
        v = mha.v_proj(memory).view(2, 6, 3, 4).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2) / 2.0).masked_fill(pad[:, None, None, :], float("-inf"))
        filler = scores.softmax(-1) @ v
        role = mha.binding.role_proj(x).view(2, 4, 3, 4).transpose(1, 2)
        expected = mha.out_proj((filler * role).transpose(1, 2).reshape(2, 4, 12))
    torch.testing.assert_close(fast, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(explicit, fast, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("binding", ["identity", "continuous_role"])
def test_kv_cache_matches_full_computation(binding):
    torch.manual_seed(2)
    mha = MultiHeadAttention(d_model=8, n_heads=2, binding=binding).eval()
    x, memory = torch.randn(2, 5, 8), torch.randn(2, 3, 8)
    with torch.no_grad():
        full_self = mha(x, causal=True)
        full_cross = mha(x, memory)
        self_cache, cross_cache = KVCache(), KVCache()
        steps_self = [mha(x[:, t : t + 1], causal=True, cache=self_cache) for t in range(5)]
        steps_cross = [mha(x[:, t : t + 1], memory, cache=cross_cache) for t in range(5)]
    assert self_cache.length == 5 and cross_cache.length == 3
    torch.testing.assert_close(torch.cat(steps_self, 1), full_self, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.cat(steps_cross, 1), full_cross, rtol=1e-5, atol=1e-6)
