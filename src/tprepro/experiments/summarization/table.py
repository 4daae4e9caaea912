"""The paper's main table (rows: Transformer, TPT-c, TPT-d; columns: ROUGE-1/2/L per dataset)
and the report around it: published numbers, TPT-d role one-hotness, sample summaries.

Published numbers are read from a CSV (model, dataset, rouge1, rouge2, rougeL, source) when
`summarization.report.published` names one; the paper's text in ../shared/papers does not
carry its table, so the project ships none.
"""

from __future__ import annotations

import pandas as pd

from tprepro.errors import TpreproError
from tprepro.experiments.summarization.scoring import ROUGE_TYPES

LABELS = {"transformer": "Transformer", "tpt_c": "TPT-c", "tpt_d": "TPT-d"}
SHORT = {"rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L"}
PUBLISHED_COLUMNS = ("model", "dataset", *ROUGE_TYPES, "source")


def label(model: str) -> str:
    return LABELS.get(model, model)


def summary_table(evals: list[dict], models: list[str], datasets: list[str]) -> pd.DataFrame:
    """One row per model: `<dataset>.<rouge>` (F1 x 100), its interval bounds, and role sharpness."""
    by_key = {(e["model"], e["dataset"]): e for e in evals}
    rows = []
    for model in models:
        row: dict = {"model": model}
        for dataset in datasets:
            if (model, dataset) not in by_key:
                raise TpreproError(f"summarization tables: no evaluation of {model} on {dataset}")
            result = by_key[(model, dataset)]
            for name in ROUGE_TYPES:
                for suffix in ("", "_low", "_high"):
                    row[f"{dataset}.{name}{suffix}"] = float(result[f"{name}{suffix}"])
            row[f"{dataset}.role_sharpness"] = float(result.get("role_sharpness", float("nan")))
            row[f"{dataset}.n"] = int(result["n"])
        rows.append(row)
    return pd.DataFrame(rows)


def read_published(path: str | None) -> pd.DataFrame | None:
    if not path:
        return None
    try:
        frame = pd.read_csv(path)
    except FileNotFoundError as exc:
        raise TpreproError(f"{path}: published-numbers file not found (summarization.report.published)") from exc
    missing = [c for c in PUBLISHED_COLUMNS if c not in frame.columns]
    if missing:
        raise TpreproError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame


def summary_markdown(table: pd.DataFrame, evals: list[dict], published: pd.DataFrame | None,
                     samples: int) -> str:
    datasets = [c.removesuffix(".rouge1") for c in table.columns if c.endswith(".rouge1")]
    head = ["model", *(f"{d} {SHORT[r]}" for d in datasets for r in ROUGE_TYPES)]
    lines = ["# Summarization: ROUGE F1 (x 100) on the test split, 95% bootstrap interval", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        cells = [label(r["model"])]
        cells += [f"{r[f'{d}.{n}']:.2f} [{r[f'{d}.{n}_low']:.2f}, {r[f'{d}.{n}_high']:.2f}]"
                  for d in datasets for n in ROUGE_TYPES]
        lines.append("| " + " | ".join(cells) + " |")
        if published is not None:
            paper = published[published["model"].isin([r["model"], label(r["model"])])]
            cells = [f"{label(r['model'])} (published)"]
            for d in datasets:
                match = paper[paper["dataset"] == d]
                cells += [f"{match.iloc[0][n]:.2f}" if len(match) else "–" for n in ROUGE_TYPES]
            lines.append("| " + " | ".join(cells) + " |")
    counts = ", ".join(f"{d}: n={int(table[f'{d}.n'].iloc[0])}" for d in datasets)
    lines += ["", f"Test documents per dataset: {counts}. METEOR: not reported (NLTK's METEOR needs the "
              "WordNet download; no well-kept library computes it offline)."]
    if published is None:
        lines.append("Published numbers: none (no published-numbers file; summarization.report.published).")
    else:
        lines.append("Published numbers: " + "; ".join(sorted(set(map(str, published["source"])))) + ".")

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
            per_model = {e["model"]: e["samples"] for e in evals if e["dataset"] == d}
            first = next(iter(per_model.values()))
            for index, sample in enumerate(first[:samples]):
                lines += [f"**{d} / {sample['id']}**", "", f"- reference: {sample['reference']}"]
                for model in table["model"]:
                    if index < len(per_model.get(model, [])):
                        lines.append(f"- {label(model)}: {per_model[model][index]['prediction'] or '(empty)'}")
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"
