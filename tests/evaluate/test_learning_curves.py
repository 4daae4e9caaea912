"""Learning curves: a held-out sample scored at every checkpoint, continued exactly across a resumption."""

import pandas as pd
import pytest
import torch

from tprepro.data.shards import open_dataset
from tprepro.evaluate.curves import HeldOut, LearningCurve, heldout_sample, heldout_scores, read_curve
from tprepro.evaluate.evaluate import EvalSet, score
from tprepro.errors import TpreproError
from tprepro.report.curves import curve_figure
from tprepro.train.trainer import Trainer

from helpers import arithmetic_rows, write_dataset
from training_kit import CrashAt, data, make_job  # noqa: F401  (the module-scoped data fixture)


@pytest.fixture(scope="module")
def heldout(tmp_path_factory):
    directory = tmp_path_factory.mktemp("heldout") / "d"
    dataset = open_dataset(write_dataset(directory, arithmetic_rows(60, seed=99), rows_per_shard=32))
    return HeldOut(heldout_sample([dataset], 24, seed=3), max_len=12, batch_size=10)


def fit_with_curve(job, checkpoint, heldout, logged, crash_at=None):
    curve = LearningCurve(heldout, checkpoint.parent / "curve.csv", checkpoint.parent / "export" / "curve.csv",
                          log_metrics=lambda metrics, step: logged.append((step, metrics)))
    callbacks = [curve] + ([CrashAt(crash_at)] if crash_at else [])
    trainer = Trainer(job, checkpoint, callbacks=callbacks)
    trainer.fit()
    return trainer


def test_a_resumed_run_continues_the_uninterrupted_curve(data, heldout, tmp_path):  # noqa: F811
    logged_full: list = []
    fit_with_curve(make_job(data, 14), tmp_path / "a" / "ckpt.pt", heldout, logged_full)
    full = read_curve(tmp_path / "a" / "export" / "curve.csv")
    assert full["step"].tolist() == [4, 8, 12, 14]  # every checkpoint, the final one once
    assert [step for step, _ in logged_full] == [4, 8, 12, 14]
    assert full["n"].eq(24).all() and full["heldout_exact_match"].between(0, 1).all()
    assert full["heldout_loss"].iloc[-1] < full["heldout_loss"].iloc[0]  # it learns

    logged: list = []
    with pytest.raises(KeyboardInterrupt):  # crashes at step 10; its last checkpoint is step 8
        fit_with_curve(make_job(data, 14), tmp_path / "b" / "ckpt.pt", heldout, logged, crash_at=10)
    fit_with_curve(make_job(data, 14), tmp_path / "b" / "ckpt.pt", heldout, logged)
    resumed = read_curve(tmp_path / "b" / "export" / "curve.csv")
    pd.testing.assert_frame_equal(resumed, full)


def test_scores_agree_with_the_evaluation_stage(data, heldout, tmp_path):  # noqa: F811
    trainer = Trainer(make_job(data, 8), tmp_path / "ckpt.pt")
    trainer.fit()
    model, vocab = trainer.model, trainer.job.vocab
    scores = heldout_scores(model, vocab, heldout.rows, heldout.batch_size, heldout.max_len)
    evaluated = score(model.eval(), vocab, EvalSet("interpolate", "m", heldout.rows), 7, heldout.max_len)
    assert scores["heldout_exact_match"] == evaluated["accuracy"]
    assert model.training is False  # heldout_scores restores the mode it found
    model.train()
    heldout_scores(model, vocab, heldout.rows, heldout.batch_size, heldout.max_len)
    assert model.training is True
    assert torch.isfinite(torch.tensor(scores["heldout_loss"]))


def test_the_sample_is_seeded_and_spread_over_datasets(tmp_path):
    a = open_dataset(write_dataset(tmp_path / "a", arithmetic_rows(40, seed=1), rows_per_shard=40))
    b = open_dataset(write_dataset(tmp_path / "b", arithmetic_rows(40, seed=2), rows_per_shard=40))
    sample = heldout_sample([a, b], 10, seed=4)
    assert sample == heldout_sample([a, b], 10, seed=4) != heldout_sample([a, b], 10, seed=5)
    a_questions = set(pd.read_parquet(a.files[0])["question"])
    assert sum(q in a_questions for q, _ in sample) == 5


def test_curve_figure_and_bad_curve_files(tmp_path):
    curve = pd.DataFrame({"step": [4, 8], "heldout_loss": [2.0, 1.0], "heldout_exact_match": [0.1, 0.4], "n": [8, 8]})
    curve_figure({("transformer", 1): curve, ("transformer", 2): curve, ("tp", 1): curve}, tmp_path / "c.png",
                 "title")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "bad.csv").write_text("step,loss\n1,2\n")
    with pytest.raises(TpreproError, match=r"bad.csv: missing columns"):
        read_curve(tmp_path / "bad.csv")
    with pytest.raises(TpreproError, match=r"gone.csv: unreadable learning curve"):
        read_curve(tmp_path / "gone.csv")


def test_equal_curves_of_two_models_both_show(tmp_path):
    """UT's line under AUT's (both at 0%): each model keeps a visible part of its colour in the PNG
    (the earlier model's line and markers wider than the later's, drawn on top), and a marker of its own."""
    import matplotlib.image

    from matplotlib.colors import to_rgb

    from tprepro.figures import model_colours
    from tprepro.report.curves import draw_curves

    curve = pd.DataFrame({"step": [4, 8, 12], "heldout_loss": [2.0, 1.5, 1.0], "heldout_exact_match": 0.0, "n": 8})
    figure = draw_curves({("ut", 1): curve, ("aut", 1): curve}, "title")
    lines = {line.get_label(): line for line in figure.axes[1].get_lines()}
    assert lines["ut (seed 1)"].get_marker() != lines["aut (seed 1)"].get_marker()
    curve_figure({("ut", 1): curve, ("aut", 1): curve}, tmp_path / "c.png", "title")
    pixels = matplotlib.image.imread(tmp_path / "c.png")[..., :3]
    for model, colour in model_colours(["ut", "aut"]).items():
        near = (abs(pixels - to_rgb(colour)).max(axis=-1) < 0.05).sum()
        assert near > 200, (model, near)  # a line's worth of pixels, not a few of antialiasing
