"""MathQA as an N2F task (TP-N2F Table 1): the official release files, gold-program quality,
operation accuracy and execution accuracy scored the way the authors' solver scores it."""

from __future__ import annotations

from collections.abc import Sequence

from tprepro.experiments.n2f.tuples import Program
from tprepro.experiments.n2f.mathqa import quality, release
from tprepro.experiments.n2f.tasks import TEST, TRAIN, Column, N2FTask, credit_row, operation_hits

MODES = ("faithful", "corrected")


class MathQATask(N2FTask):
    name = "mathqa"
    arity = 2
    schema = release.SCHEMA
    title = "MathQA (TP-N2F Table 1)"
    columns = (
        Column(TEST, "operation", "operation acc"),
        Column(TEST, "execution", "execution acc (solver)"),
        Column(TEST, "execution_strict", "execution acc (strict)"),
    )

    def split_label(self, data: dict, split: str) -> str:
        return data[f"{split}_label"]

    def load(self, data: dict) -> dict[str, list[dict]]:
        return {split: release.load_release(data[split], self.split_label(data, split)) for split in (TRAIN, TEST)}

    def quality(self, rows: Sequence[dict], settings: dict) -> dict:
        """Gold programs through both executors; the configured one is the headline."""
        by_mode = {}
        for mode in MODES:
            result = quality.gold_execution_rate(rows, mode)
            by_mode[mode] = {"gold_execution_rate": result["rate"], "gold_solver_score": result["mean_score"],
                             "gold_strict_rate": result["strict_rate"], "outcomes": dict(result["outcomes"])}
        headline = by_mode[settings["evaluate"]["execution"]]
        return {"examples": len(rows), "execution": settings["evaluate"]["execution"],
                **{key: value for key, value in headline.items() if key != "outcomes"}, "by_mode": by_mode}

    def score(self, rows: Sequence[dict], predictions: Sequence[Program], settings: dict, label: str) -> list[dict]:
        mode = settings["evaluate"]["execution"]
        checks = [quality.check_gold(row, mode, program=list(pred)) for row, pred in zip(rows, predictions)]
        return [credit_row(label, "operation", operation_hits(rows, predictions)),
                credit_row(label, "execution", [check.score for check in checks]),
                credit_row(label, "execution_strict", [check.strict for check in checks])]


TASK = MathQATask()
