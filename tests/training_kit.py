"""In-process training on a small arithmetic dataset: the job, the module-scoped `data` fixture
(import it into a test module to use it), a crash callback and the exact-resume check."""

import pytest
import torch

from tprepro.params import TrainConfig
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.models.registry import resolve_model_config
from tprepro.train.callbacks import Callback
from tprepro.train.trainer import Trainer, TrainJob

from helpers import arithmetic_rows, write_dataset

def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The reference loss: mean cross-entropy over non-pad target tokens. logits [B, T, V], targets [B, T]."""
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id)


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
                    checkpoint_every=4, log_every=2, bucket_width=8, shuffle_buffer=32, read_rows=16, device="cpu", threads=1,
                    prefetch=2)  # the background thread: what CUDA runs use (auto is 0 on CPU), the harder path to resume
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
