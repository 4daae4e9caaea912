"""In-process checks of the preemption flag, the data-parallel loss split and the speed paths."""

import os
import signal

import pytest
import torch

from tprepro.params import TrainConfig
from tprepro.data.batching import BatchStream
from tprepro.errors import TpreproError
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import build_model
from tprepro.train.callbacks import Callback
from tprepro.train.distributed import World, shard_batch
from tprepro.train.preemption import Preempted, PreemptionFlag
from tprepro.train.device import speed_paths
from tprepro.train.trainer import Trainer
from training_kit import sequence_loss

from training_kit import assert_same_weights, data, make_job  # noqa: F401  (fixture)


def test_flag_catches_sigterm_and_sigusr1_and_restores_the_handlers():
    before = signal.getsignal(signal.SIGUSR1)
    with PreemptionFlag() as flag:
        assert not flag.requested
        os.kill(os.getpid(), signal.SIGUSR1)
        assert flag.signum == signal.SIGUSR1
    assert signal.getsignal(signal.SIGUSR1) is before


class SignalAt(Callback):
    def __init__(self, step: int):
        self.step = step

    def on_log(self, step, metrics):
        if step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def test_sigterm_checkpoints_at_the_step_boundary_and_resume_is_exact(data, tmp_path):
    full = Trainer(make_job(data, 12), tmp_path / "a.pt")
    full.fit()
    stopped = Trainer(make_job(data, 12), tmp_path / "b.pt", callbacks=[SignalAt(6)])
    with pytest.raises(Preempted, match="stopped by SIGTERM at step 6"):
        stopped.fit()
    resumed = Trainer(make_job(data, 12), tmp_path / "b.pt")
    assert resumed.resumed_from == 6  # not the periodic checkpoint at 4
    resumed.fit()
    assert_same_weights(full.model, resumed.model)
    assert resumed.last_metrics["loss"] == full.last_metrics["loss"]


def test_token_weighted_shards_sum_to_the_global_token_mean(data):
    dataset, vocab = data
    batch = next(iter(BatchStream(dataset.files, vocab, 7, 8, seed=1, read_rows=16)))
    torch.manual_seed(0)
    model = build_model(resolve_model_config("transformer_tiny", {"d_model": 16, "n_heads": 2}),
                        len(vocab), vocab.pad_id)
    whole = sequence_loss(model(batch.src, batch.tgt_in), batch.tgt_out, vocab.pad_id)
    parts = []
    for rank in range(3):  # 7 rows over 3 ranks: uneven slices
        local = shard_batch(batch, World(rank, rank, 3), vocab.pad_id)
        logits = model(local.src, local.tgt_in)  # [B/3, T, V]
        token_sum = torch.nn.functional.cross_entropy(logits.flatten(0, 1), local.tgt_out.flatten(),
                                                      ignore_index=vocab.pad_id, reduction="sum")
        parts.append(token_sum * 3 / batch.n_tokens)  # what a rank back-propagates
    assert (sum(parts) / 3).item() == pytest.approx(whole.item(), abs=1e-6)  # DDP averages over ranks
    assert sum(shard_batch(batch, World(r, r, 3), vocab.pad_id).n_tokens for r in range(3)) == batch.n_tokens


def config(**speed) -> TrainConfig:
    return TrainConfig(steps=1, batch_size=1, lr=1e-3, betas=(0.9, 0.99), grad_clip=1.0, warmup_steps=0,
                       checkpoint_every=1, log_every=1, bucket_width=8, shuffle_buffer=8, read_rows=8, device="cpu",
                       threads=1, **speed)


def test_speed_paths_are_automatic_per_device_and_compile_is_refused_on_cpu():
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert speed_paths(config(), cpu) == (False, False)
    assert speed_paths(config(), gpu) == (True, True)
    assert speed_paths(config(amp=False, compile=False), gpu) == (False, False)
    assert speed_paths(config(amp=True), cpu) == (True, False)  # CPU bf16 autocast is honoured
    with pytest.raises(TpreproError, match="train.compile"):
        speed_paths(config(compile=True), cpu)


def test_bf16_autocast_trains_on_cpu(data, tmp_path):
    job = make_job(data, 3)
    job.config = TrainConfig(**{**job.config.__dict__, "amp": True})
    trainer = Trainer(job, tmp_path / "c.pt")
    assert trainer.amp
    assert torch.isfinite(torch.tensor(trainer.fit()["final_loss"]))


class WithAuxiliary(torch.nn.Module):
    """A model whose loss has an extra term, as ACT's ponder cost."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, vocab_size)
        self.last = torch.zeros(())

    def forward(self, src, tgt_in):
        self.last = self.embed.weight.pow(2).mean()
        return self.embed(tgt_in)  # [B, T, V]

    def auxiliary_loss(self):
        return 100.0 * self.last


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised by torch's own compile imports
def test_auxiliary_loss_is_found_through_ddp_and_compile_wrappers(data, tmp_path):
    import torch.distributed as dist

    from tprepro.train.step import optimizer_step, unwrap

    dataset, vocab = data
    batch = next(iter(BatchStream(dataset.files, vocab, 4, 8, seed=1, read_rows=16)))
    model = WithAuxiliary(len(vocab))
    assert unwrap(torch.compile(model)) is model  # wrapping only: nothing is compiled
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        wrapped = torch.nn.parallel.DistributedDataParallel(model)
        assert unwrap(wrapped) is model
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        loss = optimizer_step(wrapped, optimizer, batch, vocab.pad_id, 1.0, token_weight=1 / batch.n_tokens)
    finally:
        dist.destroy_process_group()
    plain = sequence_loss(model(batch.src, batch.tgt_in), batch.tgt_out, vocab.pad_id)
    assert loss.item() == pytest.approx(plain.item() + model.auxiliary_loss().item(), rel=1e-5)
