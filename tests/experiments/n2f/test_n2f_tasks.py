"""The N2F tasks' scoring and tables, fed the gold programs as predictions: the scores must
equal what the quality stage measures on the same rows."""

import pandas as pd
import pytest

from helpers import release_file
from tprepro.experiments.n2f.tuples import parse_program
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.tasks import get_task
from tprepro.report.published import published

MATHQA = {"train_label": "dev", "test_label": "test"}


def gold(rows, arity):
    return [parse_program(row["answer"], arity) for row in rows]


def by_metric(results):
    return {(r["split"], r["module"]): r for r in results}


def test_mathqa_gold_programs_score_like_the_quality_report():
    task = get_task("mathqa")
    rows = task.load({"train": release_file("mathqa/dev.json"), "test": release_file("mathqa/test.json"),
                      **MATHQA})["test"][:600]
    settings = {"evaluate": {"execution": "faithful"}, "data": MATHQA}
    scores = by_metric(task.score(rows, gold(rows, 2), settings, "test"))
    quality = task.quality(rows, settings)
    assert scores[("test", "operation")]["accuracy"] == 1.0
    assert scores[("test", "execution")]["accuracy"] == pytest.approx(quality["gold_solver_score"])
    assert scores[("test", "execution_strict")]["accuracy"] == pytest.approx(quality["gold_strict_rate"])
    empty = by_metric(task.score(rows, [[] for _ in rows], settings, "test"))
    assert empty[("test", "execution")]["accuracy"] == pytest.approx(0.2)  # the solver's chance credit
    assert empty[("test", "operation")]["correct"] == 0


def test_algolisp_gold_programs_pass_the_cleaned_set_and_tables_pool_credit():
    task = get_task("algolisp")
    data = {"source": "generate", "generate": {"seed": 4, "train": 10, "test": 120, "noise_rate": 0.2}}
    rows = task.load(data)["test"]
    scores = by_metric(task.score(rows, gold(rows, 3), {}, "generated-test"))
    quality = task.quality(rows, {})
    assert scores[("generated-test", "m_acc")]["accuracy"] == 1.0
    assert quality["gold_pass_rate"] < 1.0  # the perturbed problems
    assert scores[("generated-test", "acc")]["accuracy"] == pytest.approx(quality["gold_pass_rate"])
    cleaned = {m: scores[("generated-test-cleaned", m)] for m in ("acc", "acc_50p", "m_acc")}
    assert all(r["accuracy"] == 1.0 and r["n"] == quality["cleaned_examples"] for r in cleaned.values())

    evals = pd.DataFrame([{"model": "m", "seed": s, **r} for s in (1, 2) for r in scores.values()])
    table = task.table(evals, {"m": {"parameters": 10, "steps": 5}}, ["m"], data)
    assert table.loc[0, "generated-test.m_acc"] == 1.0 and table.loc[0, "seeds"] == 2
    paper = published("algolisp").row_for("tp_n2f")
    markdown = task.markdown(table, data, {"m": paper}, budget="5 steps of batch 2")
    assert "trained on `generated-train`" in markdown and "2 seeds per model" in markdown
    assert "100.00% ± 0.00 (paper 93.06%, Δ +6.94)" in markdown  # M-Acc (test) beside the paper's TP-N2F
    with pytest.raises(TpreproError, match="'other' has no generated-test/acc row"):
        task.table(evals, {"other": {"parameters": 1, "steps": 1}}, ["other"], data)


def test_algolisp_release_source_reads_metaset3_jsonl(tmp_path):
    """`source: release` reads JSONL files of the official schema: the real record plus generated ones."""
    from tprepro.experiments.n2f.algolisp.generator import generate
    from tprepro.experiments.n2f.algolisp.release import write_jsonl

    real = (release_file("algolisp/example_record.jsonl")).read_text()
    write_jsonl(generate(5, seed=9), tmp_path / "train.jsonl")
    (tmp_path / "test.jsonl").write_text(real)
    task = get_task("algolisp")
    data = {"source": "release", "train": tmp_path / "train.jsonl", "test": tmp_path / "test.jsonl"}
    splits = task.load(data)
    assert [len(splits["train"]), len(splits["test"])] == [5, 1]
    assert task.split_label(data, "test") == "test"
    assert task.quality(splits["test"], {})["gold_pass_rate"] == 1.0  # the real record passes its 10 tests
