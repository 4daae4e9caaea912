"""Training: resume from a checkpoint equals an uninterrupted run, bit for bit on CPU."""

import pytest
import torch

from tprepro.params import TrainConfig
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.models.registry import resolve_model_config
from tprepro.train.callbacks import Callback
from tprepro.train.checkpoint import load_checkpoint, save_checkpoint
from tprepro.train.trainer import Trainer, TrainJob
from tprepro.errors import TpreproError

from helpers import arithmetic_rows, write_dataset

SMALL = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_encoder_layers": 1, "n_decoder_layers": 1, "dropout": 0.1}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("train") / "d"
    dataset = open_dataset(write_dataset(directory, arithmetic_rows(400, seed=5), rows_per_shard=64))
    return dataset, build_vocab([dataset])


def make_job(data, steps: int, preset: str = "tp_transformer_tiny", model: dict = SMALL, seed: int = 11,
             **train) -> TrainJob:
    """A small CPU job on `data` (dataset, codec); `train` overrides the training settings."""
    dataset, vocab = data
    settings = dict(steps=steps, batch_size=8, lr=1e-3, betas=(0.9, 0.995), grad_clip=0.1, warmup_steps=3,
                    checkpoint_every=4, log_every=2, bucket_width=8, shuffle_buffer=32, read_rows=16, device="cpu", threads=1)
    config = TrainConfig(**{**settings, **train})
    return TrainJob(name="t", seed=seed, model=resolve_model_config(preset, model), config=config,
                    files=dataset.files, vocab=vocab, data_fingerprint=dataset.fingerprint())


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


class CrashAt(Callback):
    def __init__(self, step: int):
        self.step = step

    def on_log(self, step, metrics):
        if step == self.step:
            raise KeyboardInterrupt("simulated preemption")


def assert_resume_equals_uninterrupted(make, tmp_path, steps: int = 14) -> None:
    """A run that crashes at step 10 and resumes from its step-8 checkpoint ends with the
    uninterrupted run's weights and Adam moments. `make()` returns a fresh TrainJob."""
    full = Trainer(make(), tmp_path / "a" / "ckpt.pt")
    full.fit()

    crashed = Trainer(make(), tmp_path / "b" / "ckpt.pt", callbacks=[CrashAt(10)])
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()  # last checkpoint: step 8
    resumed = Trainer(make(), tmp_path / "b" / "ckpt.pt")
    assert resumed.resumed_from == 8
    resumed.fit()
    assert resumed.step == steps
    assert_same_weights(full.model, resumed.model)
    for s_full, s_res in zip(full.optimizer.state.values(), resumed.optimizer.state.values()):
        assert torch.equal(s_full["exp_avg"], s_res["exp_avg"])
        assert torch.equal(s_full["exp_avg_sq"], s_res["exp_avg_sq"])


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny"])
def test_resume_after_crash_equals_uninterrupted(data, tmp_path, preset):
    assert_resume_equals_uninterrupted(lambda: make_job(data, 14, preset), tmp_path)


def test_resume_is_exact_under_token_weighting(data, tmp_path):
    """The running count of target tokens behind `loss_weighting: token` is checkpointed."""
    assert_resume_equals_uninterrupted(lambda: make_job(data, 14, loss_weighting="token"), tmp_path)


def test_token_weighting_divides_by_the_running_mean_of_tokens_per_batch(data, tmp_path):
    trainer = Trainer(make_job(data, 6, loss_weighting="token", batching="buckets"), tmp_path / "ckpt.pt")
    counts, weights = [], []
    for batch in trainer.stream:
        counts.append(batch.n_tokens)
        weights.append(trainer.loss_weight(batch))
        trainer.step += 1
        if len(counts) == 6:
            break
    assert len(set(counts)) > 1  # buckets of different answer lengths
    for n, weight in enumerate(weights, start=1):
        assert weight == pytest.approx(n / sum(counts[:n]))
    batch_weighted = Trainer(make_job(data, 6), tmp_path / "other.pt")
    assert batch_weighted.loss_weight(next(iter(batch_weighted.stream))) is None  # the batch's own mean


def test_extending_steps_resumes_and_other_settings_restart(data, tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    Trainer(make_job(data, 6), ckpt).fit()
    longer = Trainer(make_job(data, 10), ckpt)
    assert longer.resumed_from == 6
    other = make_job(data, 10)
    other.seed = 12
    assert Trainer(other, ckpt).resumed_from is None


def test_training_reduces_the_loss(data, tmp_path):
    losses = []

    class Record(Callback):
        def on_log(self, step, metrics):
            losses.append(metrics["loss"])

    Trainer(make_job(data, 40), tmp_path / "ckpt.pt", callbacks=[Record()]).fit()
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3


def test_checkpoints_are_atomic_and_corruption_is_named(tmp_path):
    path = tmp_path / "ckpt.pt"
    save_checkpoint({"x": torch.ones(2)}, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]  # no temp file left
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(TpreproError, match="ckpt.pt: unreadable checkpoint"):
        load_checkpoint(path)
