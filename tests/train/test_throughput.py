"""train/throughput.py and the trainer's speed metrics: FLOPs per position, data wait, padding, MFU."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tprepro.data.batching import Batch
from tprepro.data.packing import pack
from tprepro.data.vocab import Vocab
from tprepro.models.attention import masks_of_kind
from tprepro.models.registry import build_model, resolve_model_config
from tprepro.train.callbacks import Callback
from tprepro.train.throughput import PROBE_ROWS, flops_per_position, matmul_peak, step_flops
from tprepro.train.trainer import Trainer
from tprepro.train.step import batch_loss

from helpers import varied_sums
from training_kit import SMALL, data, make_job  # noqa: F401  (the module-scoped data fixture)


def loss_of(model, batch):
    return batch_loss(model, batch, pad_id=0)


def random_batch(rows: int, src_len: int, tgt_len: int) -> Batch:
    src = torch.randint(4, 20, (rows, src_len))
    tgt = torch.randint(4, 20, (rows, tgt_len + 1))
    return Batch(src, tgt[:, :-1], tgt[:, 1:], rows * tgt_len)


def test_flops_per_position_from_a_few_rows_prices_the_whole_batch():
    torch.manual_seed(0)
    model = build_model(resolve_model_config("tp_transformer_tiny"), vocab_size=20, pad_id=0)
    batch = random_batch(32, 40, 12)
    whole = step_flops(loss_of, model, batch)
    assert flops_per_position(loss_of, model, batch) * batch.positions == pytest.approx(whole, rel=1e-6)
    with FlopCounterMode(display=False) as counter:
        loss_of(model, batch).backward()
    assert counter.get_total_flops() == whole  # the same rule as counting the step itself


def test_counting_leaves_the_rng_and_the_gradients_as_they_were():
    torch.manual_seed(0)
    model = build_model(resolve_model_config("tp_transformer_tiny", {"dropout": 0.3}), vocab_size=20, pad_id=0)
    batch = random_batch(8, 10, 5)
    torch.manual_seed(5)
    flops_per_position(loss_of, model, batch)
    after_count = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(after_count, torch.rand(3))
    assert all(p.grad is None for p in model.parameters())
    assert PROBE_ROWS < batch.src.shape[0]


def test_a_packed_batch_under_flex_attention_masks_is_counted_as_with_dense_masks():
    """On CUDA packed batches attend through FlexAttention, whose op FlopCounterMode cannot run (the H100
    session of 2026-11-28 stopped there); the count uses dense masks, which compute the same attention."""
    vocab = Vocab(("<pad>", "<s>", "</s>", "<unk>", *" +-0123456789?Waehst"))
    torch.manual_seed(0)
    model = build_model(resolve_model_config("tp_transformer_tiny", {"dropout": 0.0}), **vocab.model_sizes())
    packed = pack(varied_sums(24, seed=1), vocab, multiple=16)  # several problems share a row
    count = lambda model, batch: batch_loss(model, batch, vocab.pad_id)  # noqa: E731
    dense = step_flops(count, model, packed)
    with masks_of_kind(flex=True):  # as on CUDA
        assert step_flops(count, model, packed) == dense > 0


def test_the_peak_is_a_plausible_matmul_rate():
    peak = matmul_peak(torch.device("cpu"), torch.float32, n=128, repeats=3)
    assert 1e8 < peak < 1e13


class Metrics(Callback):
    def __init__(self):
        self.logged = []

    def on_log(self, step, metrics):
        self.logged.append(metrics)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_the_trainer_logs_data_wait_padding_and_mfu_per_window(data, tmp_path, prefetch):
    metrics = Metrics()
    Trainer(make_job(data, 8, log_every=4, prefetch=prefetch), tmp_path / "ckpt.pt", callbacks=[metrics]).fit()
    for window in metrics.logged:
        assert 0 <= window["data_wait_share"] < 1
        assert 0 <= window["padding_share"] < 1
        assert 0 < window["mfu_real"] <= window["mfu_padded"] < 1
        assert window["mfu_real"] / window["mfu_padded"] == pytest.approx(1 - window["padding_share"])


def test_prefetching_changes_no_number(data, tmp_path):
    """The same weights after training with batches made ahead on a thread and made in the loop."""
    trained = []
    for prefetch in (0, 3):
        trainer = Trainer(make_job(data, 10, prefetch=prefetch), tmp_path / f"p{prefetch}" / "ckpt.pt")
        trainer.fit()
        trained.append(trainer.model.state_dict())
    assert all(torch.equal(trained[0][k], trained[1][k]) for k in trained[0])
