"""What differs between the N2F tasks: loading, gold-program checks, scoring and table columns.

A task turns its release files (or generated problems) into rows with `question`
(whitespace-tokenised text) and `answer` (the tuple program, data.tuples.format_program)
plus the fields its scoring needs; n2f_stages.py runs the rest the same way for both.
Scores are written as evaluation rows (report.tables.EVAL_COLUMNS): `split` names the
test set (e.g. "test", "test-cleaned"), `module` the metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from tprepro.experiments.n2f.tuples import Program
from tprepro.errors import TpreproError
from tprepro.report.published import (PublishedRow, cell, comparison_note, over_seeds, paired_note, published,
                                      seeds_note)

TRAIN, TEST = "train", "test"


def credit_row(split: str, metric: str, credits: Sequence[float]) -> dict:
    """An evaluation row: `correct` sums per-example credit (1/0 hits, or the MathQA solver's partial credit)."""
    n, correct = len(credits), float(sum(float(c) for c in credits))
    return {"module": metric, "split": split, "n": n, "correct": correct,
            "accuracy": correct / n if n else float("nan")}


@dataclass(frozen=True)
class Column:
    split: str  # "test" or "cleaned" (resolved against the test label)
    metric: str  # evaluation row `module`
    header: str  # table header


class N2FTask:
    """Base: the table assembly shared by both tasks."""

    name: str
    arity: int
    schema = None  # pyarrow schema of the parquet rows
    columns: tuple[Column, ...] = ()
    title: str = ""

    def split_label(self, data: dict, split: str) -> str:
        return split

    def _column_split(self, column: Column, label: str) -> str:
        return label if column.split == TEST else f"{label}-{column.split}"

    def headline(self, data: dict) -> str:
        """The table column a model's DVC metric reports: the first column (the paper's first)."""
        return f"{self._column_split(self.columns[0], self.split_label(data, TEST))}.{self.columns[0].metric}"

    def table(self, evals: pd.DataFrame, training: dict[str, dict], names: Sequence[str],
              data: dict) -> pd.DataFrame:
        """One row per model (in `names` order): weights, steps, each column's accuracy (a fraction),
        computed per seed and averaged over seeds (`<column>_std`, `seeds`)."""
        pooled = evals.groupby(["model", "seed", "split", "module"], as_index=False)[["n", "correct"]].sum()
        label = self.split_label(data, TEST)
        records = []
        for name in names:
            seeds = pooled.loc[pooled["model"] == name, "seed"].unique()
            for seed in seeds if len(seeds) else [None]:
                record = {"model": name, "seed": seed, "parameters": training[name]["parameters"],
                          "steps": training[name]["steps"]}
                for column in self.columns:
                    split = self._column_split(column, label)
                    hit = pooled[(pooled["model"] == name) & (pooled["seed"] == seed) & (pooled["split"] == split)
                                 & (pooled["module"] == column.metric)]
                    if hit.empty:
                        raise TpreproError(f"evaluation of {name!r} has no {split}/{column.metric} row")
                    n, correct = int(hit["n"].iloc[0]), float(hit["correct"].iloc[0])
                    record[f"{split}.{column.metric}"] = correct / n if n else float("nan")
                records.append(record)
        metrics = [f"{self._column_split(c, label)}.{c.metric}" for c in self.columns]
        return over_seeds(pd.DataFrame.from_records(records), metrics, keep=("parameters", "steps"))

    def markdown(self, table: pd.DataFrame, data: dict, papers: dict[str, PublishedRow | None],
                 budget: str) -> str:
        """The paper's table with a caption: ours (mean ± std over seeds) beside the paper's row."""
        label = self.split_label(data, TEST)
        columns = {f"{self._column_split(c, label)}.{c.metric}": c for c in self.columns}
        lines = [f"**{self.title}**: trained on `{self.split_label(data, TRAIN)}`, evaluated on `{label}`; "
                 f"{seeds_note(table)} per model; ours: {budget}.", "",
                 "| model | weights | steps | " + " | ".join(c.header for c in columns.values()) + " |",
                 "|---|---|---|" + "---|" * len(columns)]
        for row in table.to_dict("records"):
            paper = papers.get(row["model"])
            cells = [cell(row, key, paper, paper_key=f"{column.split}.{column.metric}")
                     for key, column in columns.items()]
            lines.append(f"| {row['model']} | {row['parameters'] / 1e6:.2f}M | {row['steps']} | "
                         + " | ".join(cells) + " |")
        lines += ["", paired_note(table, {key: column.header for key, column in columns.items()}),
                  comparison_note(published(self.name))]
        return "\n".join(lines) + "\n"


def operation_hits(rows: Sequence[dict], predictions: Sequence[Program]) -> list[bool]:
    """Exact tuple-sequence match with the gold program (MathQA operation accuracy, AlgoLisp M-Acc)."""
    from tprepro.experiments.n2f.mathqa.scoring import operation_match

    return [operation_match(list(pred), row["answer"]) for row, pred in zip(rows, predictions)]


def get_task(name: str) -> N2FTask:
    """The task `name`; its module (and with it the task's dependencies) is imported on first use."""
    import importlib

    from tprepro.experiments.n2f import TASKS

    if name not in TASKS:
        raise TpreproError(f"unknown N2F task {name!r}; known: {', '.join(TASKS)}")
    return importlib.import_module(f"tprepro.experiments.n2f.{name}_task").TASK
