"""benchmarks/claim_curves.py: the paired gap per checkpoint, the seeds a gap would need, the late rise."""

import pytest

from benchmarks.claim_curves import compare, seeds_needed


def _curve(folder, points):
    folder.mkdir(parents=True)
    lines = ["step,heldout_loss,heldout_exact_match,n"] + [f"{step},1.0,{accuracy},64" for step, accuracy in points]
    (folder / "learning_curve.csv").write_text("\n".join(lines) + "\n")


def test_the_gap_is_paired_by_seed_and_the_flat_curve_has_no_rise(tmp_path):
    for seed, offset in ((1, 0.0), (2, 0.1), (3, 0.2)):  # seeds differ a lot, the gap by seed hardly
        _curve(tmp_path / f"a-s{seed}", [(1000, 0.1 + offset), (2000, 0.2 + offset), (3000, 0.2 + offset),
                                         (4000, 0.2 + offset)])
        _curve(tmp_path / f"b-s{seed}", [(1000, 0.1 + offset), (2000, 0.3 + offset), (3000, 0.4 + offset),
                                         (4000, 0.5 + offset + seed / 1000)])
    result = compare(tmp_path, "a", "b")
    last = result["points"][-1]
    assert last["step"] == 4000 and last["paired"]["mean"] == pytest.approx(30.2)
    assert last["paired"]["low"] > 29  # paired: the seeds' spread cancels
    assert result["rise_per_1000_steps"]["a"] == pytest.approx(0.0, abs=1e-9)
    assert result["rise_per_1000_steps"]["b"] == pytest.approx(10.2)  # 3,000 to 4,000: +10 points, +0.1 x seed
    assert result["seeds_needed"] == 2


def test_seeds_needed_grows_as_the_gap_shrinks_against_its_spread():
    assert seeds_needed(10.0, 1.0) == 2
    assert seeds_needed(1.0, 5.0) > seeds_needed(2.0, 5.0) > 3
    assert seeds_needed(0.0, 5.0) is None and seeds_needed(0.001, 100.0) is None
