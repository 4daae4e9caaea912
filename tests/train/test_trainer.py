"""Training: resume from a checkpoint equals an uninterrupted run, bit for bit on CPU."""

import pytest
import torch

from tprepro.train.callbacks import Callback
from tprepro.train.checkpoint import load_checkpoint, save_checkpoint
from tprepro.train.trainer import Trainer
from tprepro.errors import TpreproError

from training_kit import SMALL, assert_resume_equals_uninterrupted, data, make_job  # noqa: F401  (the module-scoped data fixture)


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
        trainer.target_tokens += batch.n_tokens  # as train_step counts them before weighing
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


class Logged(Callback):
    def __init__(self):
        self.metrics = []

    def on_log(self, step, metrics):
        self.metrics.append(metrics)


def test_packed_training_follows_the_padded_run(data, tmp_path):
    """`train.packing` lays the same random batches end to end: the same losses (to float32 rounding) and
    the same real tokens per problem (tests/data/test_packing.py measures the padding it saves)."""
    runs = {}
    for packing in (False, True):
        logged = Logged()
        job = make_job(data, 12, model={**SMALL, "dropout": 0.0}, pool_batches=1, packing=packing)
        Trainer(job, tmp_path / f"packing-{packing}" / "ckpt.pt", callbacks=[logged]).fit()
        runs[packing] = logged.metrics
    for padded, packed in zip(runs[False], runs[True]):
        assert packed["loss"] == pytest.approx(padded["loss"], rel=1e-5)
        per_problem = lambda m: m["tokens_per_s"] / m["samples_per_s"]  # noqa: E731
        assert per_problem(packed) == pytest.approx(per_problem(padded))  # samples counted as problems


def test_resume_is_exact_with_packed_batches(data, tmp_path):
    assert_resume_equals_uninterrupted(lambda: make_job(data, 14, pool_batches=1, packing=True), tmp_path)


def test_packing_is_refused_for_a_model_that_cannot_read_packed_rows(data, tmp_path):
    with pytest.raises(TpreproError, match="train.packing: the lstm architecture cannot read packed rows"):
        Trainer(make_job(data, 2, preset="lstm_tiny", model={}, packing=True), tmp_path / "ckpt.pt")
