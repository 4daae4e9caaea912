"""Packed rows (data/packing.py) give the padded batch's loss and gradients, under either attention kernel."""

import pytest
import torch

from tprepro.data.batching import collate
from tprepro.data.packing import pack
from tprepro.data.vocab import Vocab
from tprepro.models.attention import MultiHeadAttention, document_mask
from tprepro.models.probes import record_attention
from tprepro.models.registry import build_model, resolve_model_config
from tprepro.train.step import batch_loss

from helpers import varied_sums

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB = Vocab(("<pad>", "<s>", "</s>", "<unk>", *" +-0123456789?Waehst"))


def loss_and_gradients(model, batch):
    model.zero_grad(set_to_none=True)
    loss = batch_loss(model, batch, VOCAB.pad_id)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny", "tpt_d_tiny", "full_tensor_tiny"])
def test_packed_rows_give_the_padded_loss_and_gradients(preset):
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        model = build_model(resolve_model_config(preset, {"dropout": 0.0}), **VOCAB.model_sizes())
        rows = varied_sums(24, seed=1)
        packed = pack(rows, VOCAB, multiple=16)  # rows wider than the longest problem: more of them share rows
        assert packed.src.shape[0] <= len(rows) - 4  # several rows hold two problems or more
        loss, grads = loss_and_gradients(model, collate(rows, VOCAB))
        packed_loss, packed_grads = loss_and_gradients(model, packed)
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.allclose(packed_loss, loss, rtol=1e-12, atol=0)
    for name, grad in grads.items():
        assert torch.allclose(packed_grads[name], grad, rtol=1e-9, atol=1e-13), name


def attention_inputs(seed: int):
    """Packed problem indices of a source row set and a target row set (-1: padding), and inputs."""
    g = torch.Generator().manual_seed(seed)
    src_docs = torch.tensor([[0, 0, 0, 1, 1, 2, 2, 2, 2, -1, -1], [3, 3, 3, 3, 3, 4, 4, 4, -1, -1, -1]])
    tgt_docs = torch.tensor([[0, 0, 1, 2, 2, 2, -1], [3, 4, 4, 4, -1, -1, -1]])
    x = torch.randn(2, tgt_docs.shape[1], 16, generator=g)  # [R, T, D]
    memory = torch.randn(2, src_docs.shape[1], 16, generator=g)  # [R, S, D]
    return src_docs, tgt_docs, x, memory


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("binding", ["identity", "continuous_role"])
def test_flex_attention_and_the_dense_mask_attend_alike(binding):
    """The BlockMask the GPU uses (FlexAttention, run unfused on CPU, forward only: it has no CPU backward)
    against the dense mask, for the encoder's, the decoder's causal and the cross attention; real positions
    only. tests/train/test_gpu.py checks the backward on CUDA."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, binding)
    src_docs, tgt_docs, x, memory = attention_inputs(seed=2)
    cases = [(memory, None, src_docs, src_docs, False), (x, None, tgt_docs, tgt_docs, True),
             (x, memory, tgt_docs, src_docs, False)]
    for query, source, q_docs, k_docs, causal in cases:
        with torch.no_grad():
            dense = mha(query, source, causal=causal, attn_mask=document_mask(q_docs, k_docs, causal, flex=False))
            flex = mha(query, source, causal=causal, attn_mask=document_mask(q_docs, k_docs, causal, flex=True))
        real = q_docs >= 0
        assert torch.allclose(flex[real], dense[real], atol=1e-5)


def test_a_position_attends_only_within_its_problem():
    """Changing every other problem of a row leaves a problem's outputs as they were."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, "continuous_role")
    src_docs, _, _, memory = attention_inputs(seed=3)
    mask = document_mask(src_docs, src_docs)
    before = mha(memory, attn_mask=mask)
    changed = memory.clone()
    changed[src_docs != 1] += 1.0  # every position of row 0 but problem 1's, and all of row 1
    after = mha(changed, attn_mask=mask)
    assert torch.equal(after[src_docs == 1], before[src_docs == 1])


def test_attention_probes_refuse_a_block_mask():
    mha = MultiHeadAttention(16, 4, "identity")
    src_docs, _, _, memory = attention_inputs(seed=4)
    with record_attention(mha):
        with pytest.raises(ValueError, match="packed under a BlockMask"):
            mha(memory, attn_mask=document_mask(src_docs, src_docs, flex=True))
