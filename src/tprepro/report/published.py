"""Results over seeds beside the papers' published numbers.

Every table stage computes its metrics once per (model, seed), then `over_seeds`
gives each model's mean, sample standard deviation and seed count, and its paired
difference from the table's first model over the seeds both share (mean and 95% t
interval: whether an ordering holds beyond seed noise); `cell` writes one markdown
cell: ours ± std, the paper's number and the difference, and `paired_note` the line
of paired differences under a table.
The published numbers live in `published.yaml` beside this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Sequence

import pandas as pd
import yaml
from scipy import stats

from tprepro.errors import TpreproError

SEEDS = "seeds"  # column: how many seeds a model's row averages


@dataclass(frozen=True)
class PublishedRow:
    row: str  # the paper's row label, e.g. "TP-Transformer (ours), 700k steps"
    values: dict[str, float]  # column -> published value (accuracies as fractions of 1)
    steps: int | None = None  # the paper's training steps for this row, where it says
    binding: str | None = None  # for archs with variants: the binding this row used


@dataclass(frozen=True)
class PublishedTable:
    source: str  # paper, table and what the numbers average over
    budget: str  # what the paper trained with
    rows: dict[str, PublishedRow] = field(default_factory=dict)  # arch -> row

    def row_for(self, arch: str, binding: str | None = None) -> PublishedRow | None:
        """The paper's row for a model of `arch` (and `binding`, where the row names one)."""
        row = self.rows.get(arch)
        if row is None or (row.binding is not None and row.binding != binding):
            return None
        return row


@cache
def published(table: str) -> PublishedTable:
    """The published numbers of `table` ("mathematics", "two_variable", "mathqa", "algolisp")."""
    return read_published_numbers(resources.files("tprepro.report") / "published.yaml", table)


def read_published_numbers(source, table: str) -> PublishedTable:
    """The published numbers of `table` in the file `source` (published.yaml's format), each range-checked."""
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    if table not in data:
        raise TpreproError(f"{source}: no published numbers for {table!r}; known: {', '.join(sorted(data))}")
    entry = data[table]
    rows = {arch: PublishedRow(**row) for arch, row in entry["rows"].items()}
    for arch, row in rows.items():
        for column, value in row.values.items():
            check_published_value(value, f"{source}: {table}.rows.{arch}.values.{column}", column)
    return PublishedTable(source=entry["source"], budget=entry["budget"], rows=rows)


def check_published_value(value, where: str, column: str) -> None:
    """A published number: a finite number; a module count (`*_above`) a whole number >= 0, anything else
    an accuracy, a fraction of 1 in [0, 1]; otherwise an error naming `where` (file and key)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TpreproError(f"{where}: {value!r} is not a number")
    if not math.isfinite(value):
        raise TpreproError(f"{where}: {value!r} is not a finite number")
    if column.endswith("_above"):
        if value < 0 or value != int(value):
            raise TpreproError(f"{where}: {value!r} is not a count of modules (a whole number >= 0)")
    elif not 0 <= value <= 1:
        raise TpreproError(f"{where}: {value!r} is outside [0, 1] (accuracies are fractions of 1)")


def over_seeds(per_seed: pd.DataFrame, metrics: Sequence[str], keep: Sequence[str] = ()) -> pd.DataFrame:
    """One row per model from one row per (model, seed): each metric's mean and `<metric>_std`
    (sample standard deviation; NaN for a single seed), `seeds`, and the first value of each
    `keep` column (settings equal across seeds, e.g. parameters). Models keep their order.

    Each model after the first also gets `<metric>_paired`, `_paired_low`, `_paired_high`: the
    mean over shared seeds of (model − first model) and its 95% t interval (NaN under 2 shared seeds)."""
    rows = []
    groups = list(per_seed.groupby("model", sort=False))
    reference = groups[0][1].set_index("seed") if groups else None
    for index, (model, group) in enumerate(groups):
        row = {"model": model, **{column: group[column].iloc[0] for column in keep}, SEEDS: len(group)}
        for metric in metrics:
            values = group[metric].astype(float)
            row[metric] = values.mean()
            row[f"{metric}_std"] = values.std(ddof=1) if len(values) > 1 else float("nan")
            if index:
                row.update(_paired(group.set_index("seed")[metric], reference[metric], metric))
        rows.append(row)
    return pd.DataFrame(rows)


def _paired(values: pd.Series, reference: pd.Series, metric: str) -> dict[str, float]:
    """Mean of (values − reference) over the seeds both have, with its 95% t interval."""
    differences = (values.astype(float) - reference.astype(float)).dropna()
    n = len(differences)
    mean = differences.mean() if n else float("nan")
    half = (stats.t.ppf(0.975, n - 1) * differences.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return {f"{metric}_paired": mean, f"{metric}_paired_low": mean - half, f"{metric}_paired_high": mean + half}


def paired_note(table: pd.DataFrame, columns: dict[str, str]) -> str:
    """The caption line of paired differences: each model − the first, per column (`metric` -> header),
    in percentage points with the 95% interval; or why there are none."""
    reference = table["model"].iloc[0]
    shared = [row for row in table.to_dict("records")[1:]
              if any(not math.isnan(row.get(f"{m}_paired_low", float("nan"))) for m in columns)]
    if not shared:
        return f"Paired differences from {reference} need 2 or more seeds of both models."
    parts = []
    for row in shared:
        cells = [f"{header} {row[f'{m}_paired'] * 100:+.2f} [{row[f'{m}_paired_low'] * 100:+.2f}, "
                 f"{row[f'{m}_paired_high'] * 100:+.2f}]" for m, header in columns.items()]
        parts.append(f"{row['model']}: " + ", ".join(cells))
    return (f"Paired over seeds, model − {reference} in percentage points [95% t interval; "
            f"an interval that excludes 0 is an ordering beyond seed noise]: " + "; ".join(parts) + ".")


def _number(value: float, percent: bool) -> str:
    if percent:
        return f"{value:.2%}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def cell(row: dict, metric: str, paper: PublishedRow | None, percent: bool = True,
         paper_key: str | None = None) -> str:
    """`ours ± std` (± only over several seeds), then `(paper X, Δ ±Y)` where the paper published
    this column (under `paper_key`, default `metric`); percentages take the difference in percentage points."""
    mean, std = row[metric], row.get(f"{metric}_std", float("nan"))
    key = paper_key or metric
    text = _number(mean, percent)
    if not math.isnan(std):
        text += f" ± {std * 100:.2f}" if percent else f" ± {std:.1f}"
    if paper is not None and key in paper.values:
        published_value = paper.values[key]
        if percent:
            text += f" (paper {published_value:.2%}, Δ {(mean - published_value) * 100:+.2f})"
        else:
            text += f" (paper {published_value:g})"
    return text


def seeds_note(table: pd.DataFrame) -> str:
    """'3 seeds' or '1–3 seeds' for the caption."""
    counts = sorted(set(int(n) for n in table[SEEDS]))
    label = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{label} seed{'s' if counts[-1] > 1 else ''}"


def comparison_note(table: PublishedTable) -> str:
    """The caption line that says where the paper's numbers come from and what they cost."""
    return f"Paper: {table.source}; trained with {table.budget}. Δ: ours − paper, in percentage points."
