"""Result tables: per-module accuracy and the paper's Table 1 (one row per model, over seeds)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from tprepro.errors import TpreproError
from tprepro.io import atomic_path, atomic_write_text, forget_digest, read_checked_csv, record_digest
from tprepro.report.published import (PublishedRow, cell, comparison_note, over_seeds, paired_note, published,
                                      seeds_note)

EVAL_COLUMNS = ["model", "seed", "module", "split", "n", "correct", "accuracy"]
MODULE_COLUMNS = ["model", "module", "split", "n", "correct", "accuracy"]


def checked_numbers(frame: pd.DataFrame, path: Path, column: str, low: float | None = None,
                    high: float | None = None, integer: bool = False) -> pd.Series:
    """`frame[column]` as numbers, each finite (an integer if `integer`) and within [low, high];
    otherwise an error naming the file, the line (the header is line 1) and the column."""
    values = pd.to_numeric(frame[column], errors="coerce")
    for index, value in values.items():
        raw = frame.at[index, column]
        problem = None
        if value != value or not math.isfinite(value):
            problem = "is not a finite number"
        elif integer and value != int(value):
            problem = "is not an integer"
        elif low is not None and value < low or high is not None and value > high:
            problem = f"is outside [{low}, {high}]" if high is not None else f"is below {low}"
        if problem:
            raise TpreproError(f"{path}: line {index + 2}, column {column!r}: {str(raw)!r} {problem}")
    return values


ACCURACY_SLACK = 2e-6  # accuracy against correct / n: both written with 6 decimals (write_digested_csv)


def check_eval_rows(frame: pd.DataFrame, path: Path, counts: bool = False) -> pd.DataFrame:
    """An evaluation file's numbers: seed an integer, n a positive integer, 0 <= correct <= n (with
    `counts`, an integer: exact-match hits, not summed credit or ROUGE), accuracy in [0, 1] and equal to
    correct / n, all finite; otherwise an error naming the file, line and column. The one exception is
    what the evaluate stages write for an empty set (N2F's cleaned test set can be empty): n 0,
    correct 0 and no accuracy."""
    frame = frame.copy()
    frame["seed"] = checked_numbers(frame, path, "seed", integer=True).astype(int)
    frame["n"] = checked_numbers(frame, path, "n", low=0, integer=True).astype(int)
    frame["correct"] = checked_numbers(frame, path, "correct", low=0, integer=counts)
    empty = (frame["n"] == 0) & (frame["correct"] == 0) & frame["accuracy"].isna()
    checked_numbers(frame[(frame["n"] == 0) & ~empty], path, "n", low=1)  # n 0 only for an empty set
    frame.loc[~empty, "accuracy"] = checked_numbers(frame[~empty], path, "accuracy", low=0, high=1)
    over = frame.index[frame["correct"] > frame["n"]]
    if len(over):
        index = over[0]
        raise TpreproError(f"{path}: line {index + 2}, column 'correct': {frame.at[index, 'correct']:g} "
                           f"exceeds n = {frame.at[index, 'n']}")
    for index in frame.index[~empty]:
        correct, n, accuracy = frame.at[index, "correct"], frame.at[index, "n"], float(frame.at[index, "accuracy"])
        if abs(accuracy - correct / n) > ACCURACY_SLACK:
            raise TpreproError(f"{path}: line {index + 2}, column 'accuracy': {accuracy:g} is not correct / n = "
                               f"{correct:g} / {n} = {correct / n:.6f}")
    return frame


def check_set_sizes(frames: Sequence[tuple[Path, pd.DataFrame]], sizes=None) -> None:
    """Every evaluation of one set (split, module) has the same n, the set's size: equal across the files
    (every run is evaluated on the same sets) and, where `sizes`(split, module) knows the set's size from
    the params ((size, params key) or None), at most that; otherwise an error naming the file, line and
    both sizes."""
    first: dict[tuple[str, str], tuple[Path, int, int]] = {}
    for path, frame in frames:
        for index, row in frame.iterrows():
            where = f"{path}: line {index + 2}, column 'n'"
            key = (row["split"], row["module"])
            known = sizes(*key) if sizes else None
            if known is not None and row["n"] > known[0]:
                raise TpreproError(f"{where}: {row['n']} is more than the {known[0]} problems of the "
                                   f"{key[0]} set of {key[1]} ({known[1]})")
            other, line, n = first.setdefault(key, (path, index + 2, row["n"]))
            if n != row["n"]:
                raise TpreproError(f"{where}: {row['n']} differs from n = {n} of the same set ({key[0]}, {key[1]}) "
                                   f"in {other}, line {line}: every run is evaluated on the same set")


def read_eval(paths: Sequence[Path], counts: bool = False, sizes=None) -> pd.DataFrame:
    """The evaluation files at `paths`, each checked against its digest, its numbers range-checked
    (check_eval_rows; `counts`: correct is a count of hits) and each set's n against the others' and the
    size the params give it (check_set_sizes, `sizes`)."""
    frames = [(path, check_eval_rows(read_checked_csv(path, EVAL_COLUMNS, "evaluation file", digested=True), path, counts))
              for path in paths]
    check_set_sizes(frames, sizes)
    return pd.concat([frame for _, frame in frames], ignore_index=True)


def module_table(evals: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (model, module, split), pooled over seeds."""
    pooled = evals.groupby(["model", "module", "split"], as_index=False, sort=True)[["n", "correct"]].sum()
    pooled["accuracy"] = pooled["correct"] / pooled["n"]
    return pooled[MODULE_COLUMNS]


TABLE1_METRICS = ("train_acc", "interpolation_acc", "interpolation_above", "extrapolation_acc",
                  "extrapolation_above")


def seed_table1(evals: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Table 1's metrics for each (model, seed): module-averaged accuracy per split and the
    number of modules above `threshold`."""
    rows = []
    for (model, seed), group in evals.groupby(["model", "seed"], sort=False):
        accuracy = group.groupby(["split", "module"])["correct"].sum() / group.groupby(["split", "module"])["n"].sum()
        by_split = {split: accuracy.loc[split] for split in accuracy.index.get_level_values(0).unique()}
        empty = pd.Series(dtype=float)
        interp, extrap = by_split.get("interpolate", empty), by_split.get("extrapolate", empty)
        rows.append({
            "model": model, "seed": seed,
            "train_acc": by_split.get("train", empty).mean(),
            "interpolation_acc": interp.mean(),
            "interpolation_above": int((interp > threshold).sum()),
            "extrapolation_acc": extrap.mean(),
            "extrapolation_above": int((extrap > threshold).sum()),
        })
    return pd.DataFrame(rows)


def table1(evals: pd.DataFrame, training: dict[str, dict], threshold: float) -> pd.DataFrame:
    """The shape of the paper's Table 1, one row per model: each metric's mean and std over seeds."""
    per_seed = seed_table1(evals, threshold)
    per_seed["parameters"] = per_seed["model"].map(lambda m: training[m]["parameters"])
    per_seed["steps"] = per_seed["model"].map(lambda m: training[m]["steps"])
    return over_seeds(per_seed, TABLE1_METRICS, keep=("parameters", "steps"))


def table1_markdown(table: pd.DataFrame, threshold: float, n_interp: int, n_extrap: int,
                    papers: dict[str, PublishedRow | None], budget: str) -> str:
    """Table 1 with a caption: ours (mean ± std over seeds) beside the paper's row for the same architecture."""
    paper_table = published("mathematics")
    pct = f">{threshold:.0%}"
    head = ["model", "weights", "steps", "train acc", "interpolation acc", f"interpolation {pct} (of {n_interp})",
            "extrapolation acc", f"extrapolation {pct} (of {n_extrap})"]
    lines = [f"**Table 1 (Schlag et al. 2019).** Exact-match accuracy averaged over modules, "
             f"{seeds_note(table)} per model; ours: {budget}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        paper = papers.get(r["model"])
        cells = [r["model"], f"{r['parameters'] / 1e6:.2f}M", f"{r['steps']}",
                 cell(r, "train_acc", paper), cell(r, "interpolation_acc", paper),
                 cell(r, "interpolation_above", paper, percent=False),
                 cell(r, "extrapolation_acc", paper), cell(r, "extrapolation_above", paper, percent=False)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", paired_note(table, {"train_acc": "train", "interpolation_acc": "interpolation",
                                      "extrapolation_acc": "extrapolation"}),
              comparison_note(paper_table)]
    rows = [f"{model}: {paper.row}" for model, paper in papers.items() if paper is not None]
    if rows:
        lines.append("Paper rows: " + "; ".join(rows) + ".")
    return "\n".join(lines) + "\n"


def write_csv(frame: pd.DataFrame, path: Path, float_format: str | None = "%.6f") -> None:
    """`frame` as CSV at `path`, written whole or not at all; floats to 6 decimals (None: in full)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format=float_format)


def write_digested_csv(frame: pd.DataFrame, path: Path, float_format: str | None = "%.6f") -> None:
    """write_csv, then its digest recorded beside it (`<path>.sha256`): for files a later stage reads
    (evaluation files), which read_checked_csv refuses once their content changed."""
    forget_digest(path)  # killed before the new digest: no old digest is left beside the new file
    write_csv(frame, path, float_format)
    record_digest(path)


def headline_metrics(records: Sequence[dict], label: str, columns: dict[str, str]) -> dict:
    """A table's DVC metrics, {label: {metric: {model: number}}} from `columns` ({metric: table column})
    of each row of `records`: `dvc metrics show` names each `<label>.<metric>.<model>`."""
    return {label: {metric: {row["model"]: row[column] for row in records} for metric, column in columns.items()}}


def write_metrics(headlines: dict, path: Path) -> None:
    """DVC metrics: nested {name: number or {name: ...}}, NaN and empty groups left out (a metrics file
    holds numbers only)."""
    def numbers(value):
        if isinstance(value, dict):
            inner = {key: number for key, number in ((k, numbers(v)) for k, v in value.items()) if number is not None}
            return inner or None
        return float(value) if value == value else None

    body = {model: value for model, value in ((m, numbers(v)) for m, v in headlines.items()) if value is not None}
    atomic_write_text(path, json.dumps(body, indent=2, sort_keys=True) + "\n")
