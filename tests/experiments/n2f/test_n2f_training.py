"""N2F models on the shared training core, on real MathQA rows: exact resume, the data-parallel
loss weighting, and the stage-level checks (arity, missing data settings)."""

import copy
import json
import subprocess
import sys

import pytest
import torch

from helpers import release_file, load_default_params, tool_env, write_dataset, write_params
from training_kit import assert_resume_equals_uninterrupted
from training_kit import make_job as trainer_job
from tprepro.params import load_params
from tprepro.data.shards import open_dataset
from tprepro.experiments.n2f.tuple_vocab import build_tuple_vocab
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.release import SCHEMA, load_release
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import build_model
from tprepro.experiments.n2f.stages import predict_programs
from tprepro.experiments.n2f.tuples import format_program
from tprepro.train.trainer import Trainer, TrainJob
from tprepro.train.step import optimizer_step

SMALL = {"d_model": 12, "d_tuple_embedding": 8, "lstm_hidden": 16, "n_fillers": 8, "n_roles": 4,
         "d_filler": 4, "d_role": 3, "d_relation": 3, "d_argument": 4, "d_position": 2, "dropout": 0.1}


@pytest.fixture(scope="module")
def mathqa(tmp_path_factory):
    rows = load_release(release_file("mathqa/dev.json"), "dev")[:240]
    directory = write_dataset(tmp_path_factory.mktemp("mathqa") / "train", rows, rows_per_shard=80, schema=SCHEMA)
    return open_dataset(directory, schema=SCHEMA), build_tuple_vocab(((r["question"], r["answer"]) for r in rows), arity=2)


def make_job(data, steps: int, preset: str) -> TrainJob:
    return trainer_job(data, steps, preset, model=SMALL, seed=3, grad_clip=5.0, warmup_steps=2, bucket_width=16)


@pytest.mark.parametrize("preset", ["tp_n2f_tiny", "lstm2lstm_tiny"])
def test_resume_after_crash_equals_uninterrupted(mathqa, tmp_path, preset):
    assert_resume_equals_uninterrupted(lambda: make_job(mathqa, 12, preset), tmp_path, steps=12)


def test_summed_loss_with_the_ddp_weight_equals_the_mean_loss(mathqa):
    """Ranks add weight * summed tuple loss; with the whole batch that is the single-process mean."""
    dataset, vocab = mathqa
    from tprepro.data.batching import BatchStream

    batch = next(iter(BatchStream(dataset.files, vocab, 8, 16, seed=1)))
    losses, grads = [], []
    for weight in (None, 1 / batch.n_tokens):
        torch.manual_seed(0)
        model = build_model(resolve_model_config("tp_n2f_tiny", {**SMALL, "dropout": 0.0}), **vocab.model_sizes())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        losses.append(optimizer_step(model, optimizer, batch, vocab.pad_id, 5.0, token_weight=weight))
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(losses[0], losses[1])
    torch.testing.assert_close(grads[0], grads[1])


def test_stage_checks_name_the_key(tmp_path):
    from tprepro.experiments.n2f.stages import train_stage

    params = load_default_params()
    params["n2f"]["tasks"] = ["mathqa"]
    with pytest.raises(TpreproError, match=r"n2f.mathqa.data.train: set the path"):
        load_params(write_params(tmp_path / "missing.yaml", params))
    params["n2f"]["mathqa"]["data"].update(train="dev.json", test="test.json")
    params["n2f"]["mathqa"]["models"]["tp_n2f"]["tuple_arity"] = 3
    path = write_params(tmp_path / "arity.yaml", params)
    with pytest.raises(TpreproError, match=r"n2f.mathqa.models.tp_n2f.tuple_arity"):
        train_stage(str(path), "mathqa", "tp_n2f", 1, tmp_path, tmp_path / "v.json", tmp_path, tmp_path)
    broken = copy.deepcopy(params)
    del broken["n2f"]["algolisp"]["models"]["lstm2tp"]
    with pytest.raises(TpreproError, match=r"'lstm2tp' has no entry under n2f.algolisp.models"):
        load_params(write_params(tmp_path / "models.yaml", broken))


def test_predict_writes_the_program_and_its_mathqa_value(mathqa, tmp_path):
    """`tprepro predict` on an N2F model answers with the greedy program and, for MathQA, its value."""
    trainer = Trainer(make_job(mathqa, 4, "tp_n2f_tiny"), tmp_path / "ckpt.pt")
    trainer.fit()
    model_dir = tmp_path / "model"
    trainer.export(model_dir / "model.pt")
    (model_dir / "train_metrics.json").write_text(json.dumps({"name": "mathqa/tp_n2f-s3"}))
    questions = [row["question"] for row in load_release(release_file("mathqa/dev.json"), "dev")[:3]]
    result = subprocess.run([sys.executable, "-m", "tprepro", "predict", "--model-dir", str(model_dir), "--json",
                             "--max-length", "6", *questions], env=tool_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    programs = predict_programs(trainer.model.eval(), mathqa[1], questions, 64, 6)
    assert [r["program"] for r in records] == [format_program(p) for p in programs]
    assert [r["question"] for r in records] == questions and all("value" in r for r in records)
