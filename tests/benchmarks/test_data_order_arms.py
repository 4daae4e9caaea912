"""benchmarks/data_order.py: what each arm name stands for, and which sweep files are one table."""

import json

import pytest

from benchmarks.data_order import arm_settings, reprint


@pytest.mark.parametrize("arm, settings", [
    ("random", {"batching": "pool", "pool_batches": 1, "loss_weighting": "batch", "packing": False}),
    ("buckets", {"batching": "buckets", "bucket_width": 16, "loss_weighting": "batch", "packing": False}),
    ("buckets8", {"batching": "buckets", "bucket_width": 8, "loss_weighting": "batch", "packing": False}),
    ("pool16", {"batching": "pool", "pool_batches": 16, "loss_weighting": "batch", "packing": False}),
    ("pool16t", {"batching": "pool", "pool_batches": 16, "loss_weighting": "token", "packing": False}),
    ("randomt", {"batching": "pool", "pool_batches": 1, "loss_weighting": "token", "packing": False}),
    ("randomp", {"batching": "pool", "pool_batches": 1, "loss_weighting": "batch", "packing": True}),
    ("pool4tp", {"batching": "pool", "pool_batches": 4, "loss_weighting": "token", "packing": True}),
])
def test_arm_names(arm, settings):
    assert arm_settings(arm, bucket_width=16) == settings


@pytest.mark.parametrize("arm", ["pool", "random4", "shuffled", "pool16x", "randompt"])
def test_unknown_arms_are_refused(arm):
    with pytest.raises(SystemExit, match="unknown arm"):
        arm_settings(arm, bucket_width=16)


def _sweep(path, arms, bucket_width, pool_batches, seeds=(1, 2)):
    """A sweep file as data_order.py writes it: `arms` over `seeds`, each scored once (accuracy = seed / 10)."""
    point = lambda seed: {"step": 10, "seconds": 1.0, "samples": 80, "cpu_seconds": 1.0,
                          "heldout_loss": 1.0 / seed, "accuracy": seed / 10}
    path.write_text(json.dumps({
        "experiment": "algolisp", "model": {"arch": "tp_n2f"},
        "diversity": {arm: {"labels_per_batch": 2.0, "padding": 0.1} for arm in arms},
        "train": {"steps": 10, "batch_size": 8, "lr": 1e-3, "batching": "pool", "pool_batches": pool_batches,
                  "bucket_width": bucket_width, "loss_weighting": "batch"},
        "runs": {arm: {str(seed): [point(seed)] for seed in seeds} for arm in arms}}))
    return path


def test_files_differing_only_in_the_order_settings_are_one_table(tmp_path, capsys):
    """A later sweep of a new arm joins the first one's table, though the params' default pool size
    and bucket width changed in between: every arm sets its own batch order."""
    first = _sweep(tmp_path / "first.json", ["buckets", "random"], bucket_width=16, pool_batches=16)
    later = _sweep(tmp_path / "later.json", ["pool16"], bucket_width=8, pool_batches=4)
    reprint([first, later])
    out = capsys.readouterr().out
    assert "first.json + later.json: seeds [1, 2]" in out
    assert all(f"| {arm} |" in out for arm in ("buckets", "random", "pool16"))


def test_an_arm_run_two_ways_is_refused(tmp_path):
    """`buckets` of bucket width 16 in one file and 8 in another are different arms: no silent merge."""
    first = _sweep(tmp_path / "first.json", ["buckets"], bucket_width=16, pool_batches=16)
    later = _sweep(tmp_path / "later.json", ["buckets"], bucket_width=8, pool_batches=16)
    with pytest.raises(SystemExit, match="arm buckets ran as"):
        reprint([first, later])
