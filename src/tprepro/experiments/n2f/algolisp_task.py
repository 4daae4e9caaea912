"""AlgoLisp as an N2F task (TP-N2F Table 2): metaset3 JSONL files or generated problems of the
same schema; Acc, 50p-Acc and M-Acc on the full and the cleaned test set."""

from __future__ import annotations

from collections.abc import Sequence

from tprepro.experiments.n2f.algolisp import generator, metrics, release
from tprepro.experiments.n2f.tuples import Program
from tprepro.experiments.n2f.tasks import TEST, TRAIN, Column, N2FTask, credit_row, operation_hits

CLEANED = "cleaned"  # the test set without the examples whose gold program fails a test


class AlgoLispTask(N2FTask):
    name = "algolisp"
    arity = 3
    schema = release.SCHEMA
    title = "AlgoLisp (TP-N2F Table 2)"
    columns = tuple(Column(split, metric, f"{header} ({split})")
                    for split in (TEST, CLEANED)
                    for metric, header in (("acc", "Acc"), ("acc_50p", "50p-Acc"), ("m_acc", "M-Acc")))

    def split_label(self, data: dict, split: str) -> str:
        return split if data["source"] == "release" else f"generated-{split}"

    def load(self, data: dict) -> dict[str, list[dict]]:
        if data["source"] == "release":
            return {split: release.load_jsonl(data[split], split) for split in (TRAIN, TEST)}
        settings = data["generate"]
        records = generator.generate(settings["train"] + settings["test"], settings["seed"], settings["noise_rate"])
        parts = {TRAIN: records[: settings["train"]], TEST: records[settings["train"]:]}
        return {split: [release.record_to_row(record, split, i, f"generated {split} problem {i}")
                        for i, record in enumerate(part)] for split, part in parts.items()}

    def quality(self, rows: Sequence[dict], settings: dict) -> dict:
        """The share of gold programs passing all their tests: what the cleaned test set keeps."""
        clean = sum(metrics.is_clean(release.row_to_record(row)) for row in rows)
        return {"examples": len(rows), "gold_pass_rate": clean / len(rows) if rows else float("nan"),
                "cleaned_examples": clean}

    def score(self, rows: Sequence[dict], predictions: Sequence[Program], settings: dict, label: str) -> list[dict]:
        records = [release.row_to_record(row) for row in rows]
        passed = [metrics.fraction_passed(record, list(pred)) for record, pred in zip(records, predictions)]
        exact = operation_hits(rows, predictions)
        clean = [metrics.is_clean(record) for record in records]
        results = []
        for split, keep in ((label, [True] * len(rows)), (f"{label}-{CLEANED}", clean)):
            chosen = [i for i, k in enumerate(keep) if k]
            results += [credit_row(split, "acc", [passed[i] == 1.0 for i in chosen]),
                        credit_row(split, "acc_50p", [passed[i] >= 0.5 for i in chosen]),
                        credit_row(split, "m_acc", [exact[i] for i in chosen])]
        return results


TASK = AlgoLispTask()
