"""Paired differences over seeds: each model − the table's first model, with a 95% t interval."""

import math

import pandas as pd
import pytest

from tprepro.report.published import over_seeds, paired_note


def per_seed(rows):
    return pd.DataFrame([{"model": m, "seed": s, "acc": a} for m, s, a in rows])


def test_the_paired_difference_uses_shared_seeds_and_the_t_interval():
    table = over_seeds(per_seed([("base", 1, 0.50), ("base", 2, 0.60), ("base", 3, 0.70), ("base", 4, 0.9),
                                 ("tpr", 1, 0.55), ("tpr", 2, 0.70), ("tpr", 3, 0.72)]), ["acc"]).set_index("model")
    differences = [0.05, 0.10, 0.02]  # seed 4 has no tpr run: left out of the pairs
    mean = sum(differences) / 3
    sd = pd.Series(differences).std()
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, df 2)
    assert table.loc["tpr", "acc_paired"] == pytest.approx(mean)
    assert table.loc["tpr", "acc_paired_low"] == pytest.approx(mean - half)
    assert table.loc["tpr", "acc_paired_high"] == pytest.approx(mean + half)
    assert "acc_paired" not in table.columns or math.isnan(table.loc["base"].get("acc_paired", math.nan))


def test_the_note_reads_in_percentage_points_and_says_when_seeds_are_too_few():
    table = over_seeds(per_seed([("base", 1, 0.5), ("base", 2, 0.6), ("tpr", 1, 0.7), ("tpr", 2, 0.7)]), ["acc"])
    note = paired_note(table, {"acc": "Acc"})
    # differences +20 and +10 points: mean +15, half-width t(0.975, 1) * 7.07 / sqrt(2) = 63.53
    assert "model − base" in note and "tpr: Acc +15.00 [-48.53, +78.53]" in note
    single = over_seeds(per_seed([("base", 1, 0.5), ("tpr", 1, 0.7)]), ["acc"])
    assert paired_note(single, {"acc": "Acc"}) == "Paired differences from base need 2 or more seeds of both models."
