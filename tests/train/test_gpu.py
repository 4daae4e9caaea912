"""The CUDA speed paths agree with the plain fp32 eager path (marker `gpu`; skipped without CUDA).

- bf16 autocast (train.amp) against fp32: the training loss of the trainer's own step on a fixed batch;
- torch.compile (train.compile) against eager: teacher-forced logits;
- cached against uncached greedy decoding on the GPU: the same tokens, and the incremental
  logits equal the full-prefix logits;
- packed rows (train.packing, FlexAttention document masks) against padded rows, eager and compiled:
  loss and gradients; their step's FLOPs counted.
Run them with `pytest -m gpu` on a machine with a CUDA device.
"""

from __future__ import annotations

import copy

import pytest
import torch

from tprepro.data.batching import collate
from tprepro.data.packing import pack
from tprepro.data.vocab import build_vocab
from tprepro.evaluate.decode import greedy_decode
from tprepro.models import build_model, resolve_model_config
from tprepro.train.throughput import flops_per_position
from tprepro.train.step import batch_loss, optimizer_step
from training_kit import sequence_loss

from helpers import arithmetic_rows, varied_sums, write_dataset

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

PRESETS = ["transformer_tiny", "tp_transformer_tiny", "tpt_d_tiny", "ut_tiny"]
PAPER_WIDTH = {"n_encoder_layers": 2, "n_decoder_layers": 2}  # the paper's widths, fewer cells


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """64 add/sub problems as a real parquet dataset, their vocabulary and one padded batch on the GPU."""
    rows = arithmetic_rows(64, seed=7)
    dataset = write_dataset(tmp_path_factory.mktemp("gpu") / "arithmetic__add_or_sub", rows)
    from tprepro.data.shards import open_dataset

    vocab = build_vocab([open_dataset(dataset)])
    batch = collate([(r["question"], r["answer"]) for r in rows], vocab).to(torch.device("cuda"))
    return vocab, batch


def cuda_model(preset: str, vocab, seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_model(resolve_model_config(preset, overrides), len(vocab), vocab.pad_id).cuda()


@pytest.mark.parametrize("preset,overrides", [(p, {}) for p in PRESETS] + [("tp_transformer_paper", PAPER_WIDTH)])
def test_bf16_autocast_loss_matches_fp32(preset, overrides, data):
    vocab, batch = data
    fp32 = cuda_model(preset, vocab, **overrides).train()
    bf16 = copy.deepcopy(fp32)
    losses = {}
    for amp, model in ((False, fp32), (True, bf16)):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        first = optimizer_step(model, optimizer, batch, vocab.pad_id, grad_clip=0.1, amp=amp).item()
        second = optimizer_step(model, optimizer, batch, vocab.pad_id, grad_clip=0.1, amp=amp).item()
        losses[amp] = (first, second)
    for fp32_loss, bf16_loss in zip(losses[False], losses[True]):
        assert bf16_loss == pytest.approx(fp32_loss, rel=2e-2), losses  # bf16: 8 mantissa bits
    assert losses[False][1] < losses[False][0] and losses[True][1] < losses[True][0]  # both learn


@pytest.mark.parametrize("preset", PRESETS)
def test_compiled_model_matches_eager(preset, data):
    vocab, batch = data
    model = cuda_model(preset, vocab).eval()
    compiled = torch.compile(model)
    with torch.no_grad():
        eager_logits = model(batch.src, batch.tgt_in)
        compiled_logits = compiled(batch.src, batch.tgt_in)
        eager_loss = sequence_loss(eager_logits, batch.tgt_out, vocab.pad_id)
        compiled_loss = sequence_loss(compiled_logits, batch.tgt_out, vocab.pad_id)
    torch.testing.assert_close(compiled_logits, eager_logits, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(compiled_loss, eager_loss, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny", "tpt_d_tiny", "ut_tiny"])
def test_cached_and_uncached_greedy_decoding_agree_on_cuda(preset, data):
    vocab, batch = data
    model = cuda_model(preset, vocab, seed=5).eval()
    cached = greedy_decode(model, batch.src, vocab.bos_id, vocab.eos_id, max_len=12, use_cache=True)
    uncached = greedy_decode(model, batch.src, vocab.bos_id, vocab.eos_id, max_len=12, use_cache=False)
    assert cached.is_cuda and cached.shape[0] == batch.src.size(0)
    assert torch.equal(cached, uncached)
    with torch.no_grad():  # the logits behind them: one step at a time equals the whole prefix
        memory, src_mask = model.encode(batch.src)
        prefix = torch.cat([torch.full_like(cached[:, :1], vocab.bos_id), cached[:, :-1]], dim=1)  # [B, L]
        full = model.decode(prefix, memory, src_mask)  # [B, L, V]
        cache = model.new_cache()
        steps = [model.decode(prefix[:, t : t + 1], memory, src_mask, cache) for t in range(prefix.size(1))]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny", "tpt_d_tiny"])
def test_packed_rows_under_flex_attention_match_padded_rows(preset, compiled, data):
    """On CUDA the packed path runs FlexAttention with a BlockMask built in the forward (inside the
    compiled graph when compiled); fp32 loss and gradients against the padded batch's."""
    vocab, _ = data
    rows = varied_sums(96, seed=3)  # the characters of the add/sub problems, of very different lengths
    padded, packed = (b.to(torch.device("cuda")) for b in (collate(rows, vocab), pack(rows, vocab)))
    assert packed.src.shape[0] < padded.src.shape[0]
    model = cuda_model(preset, vocab, dropout=0.0).train()
    net = torch.compile(model) if compiled else model
    results = []
    for batch in (padded, packed):
        model.zero_grad(set_to_none=True)
        loss = batch_loss(net, batch, vocab.pad_id)
        loss.backward()
        results.append((loss.detach(), [p.grad.clone() for p in model.parameters()]))
    (loss, grads), (packed_loss, packed_grads) = results
    torch.testing.assert_close(packed_loss, loss, rtol=1e-4, atol=1e-5)
    for packed_grad, grad in zip(packed_grads, grads):
        torch.testing.assert_close(packed_grad, grad, rtol=1e-3, atol=1e-5)


def test_the_flops_of_a_packed_step_are_counted_on_cuda(data):
    """The trainer counts a step's FLOPs on its first batch; a packed one attends through FlexAttention on
    CUDA, which FlopCounterMode cannot run (benchmarks/gpu_session.sh stopped there on 2026-11-28)."""
    vocab, _ = data
    packed = pack(varied_sums(96, seed=3), vocab).to(torch.device("cuda"))
    model = cuda_model("tp_transformer_tiny", vocab, dropout=0.0)
    assert flops_per_position(lambda m, b: batch_loss(m, b, vocab.pad_id), model, packed) > 0
