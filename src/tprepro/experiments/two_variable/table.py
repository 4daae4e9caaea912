"""The two-variable experiment's table (the shape of Wangperawong 2018, Table 3).

One row per model: exact-match test accuracy per expression type and overall
(pooled over the test set; the types are equally frequent, so this is also
their mean, as the paper's overall figures are), plus training wall time, also
relative to the first model listed (the Transformer, as the paper compares UT
and AUT against it). Time is measured per step over the job's last session and
scaled to all steps: for an uninterrupted job that is its wall time, and a
resumed job is not credited with the steps of its earlier sessions.
"""

from __future__ import annotations

import pandas as pd

from tprepro.experiments.two_variable.data import TYPES
from tprepro.errors import TpreproError
from tprepro.report.published import (PublishedRow, cell, comparison_note, over_seeds, paired_note, published,
                                      seeds_note)

DISPLAY = {"a+a": "a+a", "a-a": "a−a", "a*a": "a×a", "a+b": "a+b", "a-b": "a−b", "a*b": "a×b"}


def type_table(evals: pd.DataFrame, training: dict[str, dict]) -> pd.DataFrame:
    """evals: EVAL_COLUMNS rows (module = expression type); training: train_metrics.json per model.

    Accuracies are computed per seed, then averaged over seeds (`<column>_std`, `seeds`)."""
    per_seed = []
    for (model, seed), group in evals.groupby(["model", "seed"], sort=False):
        pooled = group.groupby("module")[["n", "correct"]].sum()
        missing = [label for label in TYPES if label not in pooled.index]
        if missing:
            raise TpreproError(f"evaluation of {model} (seed {seed}): no rows for expression types {missing}")
        row = {"model": model, "seed": seed}
        row.update({label: pooled.loc[label, "correct"] / pooled.loc[label, "n"] for label in TYPES})
        row["overall"] = pooled["correct"].sum() / pooled["n"].sum()
        per_seed.append(row)
    table = over_seeds(pd.DataFrame(per_seed), (*TYPES, "overall"))
    timing = []
    for model in table["model"]:
        summary = training[model]
        per_step = summary["wall_seconds"] / (summary["steps"] - (summary.get("resumed_from") or 0))
        timing.append({"model": model, "parameters": summary["parameters"], "steps": summary["steps"],
                       "seconds_per_step": per_step, "train_seconds": per_step * summary["steps"]})
    timing = pd.DataFrame(timing)
    timing["time_vs_first"] = timing["seconds_per_step"] / timing["seconds_per_step"].iloc[0]
    return table.merge(timing, on="model", sort=False)


def type_table_markdown(table: pd.DataFrame, papers: dict[str, PublishedRow | None], budget: str) -> str:
    """Table 3 with a caption: accuracy per expression type (mean ± std over seeds) beside the paper's."""
    first = table["model"].iloc[0]
    head = ["model", "weights", "steps", *(DISPLAY[t] for t in TYPES), "overall", "s/step", "train s",
            f"time / {first}"]
    lines = [f"**Table 3 (Wangperawong 2018).** Exact-match test accuracy per expression type, "
             f"{seeds_note(table)} per model; ours: {budget}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        paper = papers.get(r["model"])
        cells = [r["model"], f"{r['parameters'] / 1e6:.2f}M", str(r["steps"]),
                 *(cell(r, t, paper) for t in (*TYPES, "overall")),
                 f"{r['seconds_per_step']:.3f}", f"{r['train_seconds']:.0f}", f"{r['time_vs_first']:.2f}×"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", paired_note(table, {"overall": "overall"}), comparison_note(published("two_variable"))]
    return "\n".join(lines) + "\n"
