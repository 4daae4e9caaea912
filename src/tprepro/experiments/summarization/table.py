"""The paper's main table (rows: Transformer, TPT-c, TPT-d; columns: ROUGE-1/2/L per dataset)
and the report around it: published numbers, TPT-d role one-hotness, sample summaries (documents'
and models' text escaped: report.html.markdown_text).

Each cell is the mean F1 over a model's seeds (each seed: the mean over the test documents),
with the percentile-bootstrap interval over documents (a document's score: its mean over seeds)
and, with several seeds, their standard deviation. Published numbers are read from a CSV (model,
dataset, rouge1, rouge2, rougeL, source) when `summarization.report.published` names one; the
paper's text in ../shared/papers does not carry its table, so the project ships none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tprepro.errors import TpreproError
from tprepro.experiments.summarization.scoring import ROUGE_TYPES, bootstrap_interval
from tprepro.report.html import markdown_text

LABELS = {"transformer": "Transformer", "tpt_c": "TPT-c", "tpt_d": "TPT-d"}
SHORT = {"rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L"}
PUBLISHED_COLUMNS = ("model", "dataset", *ROUGE_TYPES, "source")
DOCUMENT_COLUMNS = ("id", *ROUGE_TYPES, "reference", "prediction")  # the evaluate stage's per-document file


@dataclass(frozen=True)
class RunEvaluation:
    """One trained run's evaluation on one dataset, as the evaluate stage wrote it."""

    model: str
    dataset: str
    seed: int
    documents: pd.DataFrame  # DOCUMENT_COLUMNS, one row per test document (F1 in [0, 1])
    role_sharpness: float | None  # share of sharp role attentions (discrete-role models), else None


def label(model: str) -> str:
    return LABELS.get(model, model)


def _cells(runs: list[RunEvaluation], bootstrap: dict) -> dict[str, float]:
    """ROUGE cells of one (model, dataset) over its runs: `<rouge>`, `_low`, `_high`, `_sd` (x 100)."""
    ids = [tuple(run.documents["id"]) for run in runs]
    if len(set(ids)) > 1:
        raise TpreproError(f"summarization tables: the seeds of {runs[0].model} on {runs[0].dataset} "
                           "were evaluated on different documents")
    cells: dict[str, float] = {}
    for name in ROUGE_TYPES:
        per_run = np.stack([run.documents[name].to_numpy(dtype=float) for run in runs])  # [seeds, documents]
        low, high = bootstrap_interval(per_run.mean(axis=0), bootstrap["confidence"], bootstrap["resamples"],
                                       bootstrap["seed"])
        run_means = per_run.mean(axis=1)  # [seeds]
        cells[name] = 100 * float(run_means.mean())
        cells[f"{name}_low"], cells[f"{name}_high"] = 100 * low, 100 * high
        cells[f"{name}_sd"] = 100 * float(run_means.std(ddof=1)) if len(runs) > 1 else float("nan")
    return cells


def summary_table(evals: list[RunEvaluation], models: list[str], datasets: list[str],
                  bootstrap: dict) -> pd.DataFrame:
    """One row per model: `<dataset>.<rouge>` (F1 x 100), its interval bounds and seed spread, role
    sharpness, documents and seeds. `bootstrap`: {confidence, resamples, seed}."""
    rows = []
    for model in models:
        row: dict = {"model": model}
        for dataset in datasets:
            runs = sorted((e for e in evals if (e.model, e.dataset) == (model, dataset)), key=lambda e: e.seed)
            if not runs:
                raise TpreproError(f"summarization tables: no evaluation of {model} on {dataset}")
            row.update({f"{dataset}.{key}": value for key, value in _cells(runs, bootstrap).items()})
            shares = [run.role_sharpness for run in runs if run.role_sharpness is not None]
            row[f"{dataset}.role_sharpness"] = float(np.mean(shares)) if shares else float("nan")
            row[f"{dataset}.n"] = len(runs[0].documents)
            row[f"{dataset}.seeds"] = len(runs)
        rows.append(row)
    return pd.DataFrame(rows)


def read_published(path: str | None) -> pd.DataFrame | None:
    """The published-numbers CSV at `path` (None: none), its ROUGE columns range-checked: each a finite
    F1 x 100 in [0, 100]; otherwise an error naming the file, line and column."""
    from tprepro.report.tables import checked_numbers

    if not path:
        return None
    try:
        frame = pd.read_csv(path)
    except FileNotFoundError as exc:
        raise TpreproError(f"{path}: published-numbers file not found (summarization.report.published)") from exc
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:  # UnicodeDecodeError too
        raise TpreproError(f"{path}: unreadable published-numbers file ({exc})") from exc
    missing = [c for c in PUBLISHED_COLUMNS if c not in frame.columns]
    if missing:
        raise TpreproError(f"{path}: missing column(s) {', '.join(missing)}")
    for rouge in ROUGE_TYPES:  # F1 x 100, as the table prints ours
        frame[rouge] = checked_numbers(frame, path, rouge, low=0, high=100)
    return frame


def _cell(row: dict, key: str) -> str:
    spread = f" ± {row[f'{key}_sd']:.2f}" if row[f"{key}_sd"] == row[f"{key}_sd"] else ""  # NaN: one seed
    return f"{row[key]:.2f}{spread} [{row[f'{key}_low']:.2f}, {row[f'{key}_high']:.2f}]"


def summary_markdown(table: pd.DataFrame, evals: list[RunEvaluation], published: pd.DataFrame | None,
                     samples: int) -> str:
    datasets = [c.removesuffix(".rouge1") for c in table.columns if c.endswith(".rouge1")]
    head = ["model", *(f"{d} {SHORT[r]}" for d in datasets for r in ROUGE_TYPES)]
    lines = ["# Summarization: ROUGE F1 (x 100) on the test split, 95% bootstrap interval", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join([label(r["model"]), *(_cell(r, f"{d}.{n}") for d in datasets
                                                             for n in ROUGE_TYPES)]) + " |")
        if published is not None:
            paper = published[published["model"].isin([r["model"], label(r["model"])])]
            cells = [f"{label(r['model'])} (published)"]
            for d in datasets:
                match = paper[paper["dataset"] == d]
                cells += [f"{match.iloc[0][n]:.2f}" if len(match) else "–" for n in ROUGE_TYPES]
            lines.append("| " + " | ".join(cells) + " |")
    counts = ", ".join(f"{d}: n={int(table[f'{d}.n'].iloc[0])}" for d in datasets)
    seeds = int(table[[f"{d}.seeds" for d in datasets]].to_numpy().max())
    spread = (f"Each cell: the mean over {seeds} seeds ± their standard deviation, and the interval over "
              "documents (each document's score averaged over seeds). ") if seeds > 1 else ""
    lines += ["", f"{spread}Test documents per dataset: {counts}. METEOR: not reported (NLTK's METEOR needs "
              "the WordNet download; no well-kept library computes it offline)."]
    if published is None:
        lines.append("Published numbers: none (no published-numbers file; summarization.report.published).")
    else:
        lines.append("Published numbers: " + "; ".join(sorted(set(map(markdown_text, published["source"])))) + ".")

    sharp = [(r["model"], d, r[f"{d}.role_sharpness"]) for r in table.to_dict("records") for d in datasets
             if r[f"{d}.role_sharpness"] == r[f"{d}.role_sharpness"]]
    if sharp:
        lines += ["", "## Role one-hotness (discrete roles)", "",
                  "Share of role-attention distributions whose largest weight exceeds 0.98 "
                  "(the paper: over 90% on XSum).", "", "| model | dataset | share |", "|---|---|---|"]
        lines += [f"| {label(m)} | {d} | {s:.3f} |" for m, d, s in sharp]

    if samples:
        lines += ["", "## Sample summaries", ""]
        for d in datasets:
            first_seed = {}
            for e in sorted(evals, key=lambda e: e.seed):
                if e.dataset == d:
                    first_seed.setdefault(e.model, e.documents)
            reference = next(iter(first_seed.values())).head(samples)
            for index, sample in enumerate(reference.itertuples()):
                lines += [f"**{d} / {markdown_text(sample.id)}**", "", f"- reference: {markdown_text(sample.reference)}"]
                for model in table["model"]:
                    if model in first_seed and index < len(first_seed[model]):
                        prediction = first_seed[model]["prediction"].iloc[index]
                        lines.append(f"- {label(model)}: {markdown_text(prediction) if prediction else '(empty)'}")
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"
