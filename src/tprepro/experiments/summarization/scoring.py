"""ROUGE-1/2/L F1 (rouge-score, Porter stemming) and percentile-bootstrap confidence intervals.

METEOR is not reported: NLTK's METEOR needs the WordNet corpus, a download, and no other
well-kept library computes it offline.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from rouge_score import rouge_scorer
from scipy import stats

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge_f1(predictions: Sequence[str], references: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-example F1 of each ROUGE type, as arrays of len(predictions)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    per_type = {name: [] for name in ROUGE_TYPES}
    for prediction, reference in zip(predictions, references):
        scores = scorer.score(reference, prediction)  # rouge-score's argument order: (target, prediction)
        for name in ROUGE_TYPES:
            per_type[name].append(scores[name].fmeasure)
    return {name: np.asarray(values, dtype=float) for name, values in per_type.items()}


def bootstrap_interval(values: np.ndarray, confidence: float, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of `values` (seeded: the same inputs give the same interval)."""
    if len(values) == 0:
        return float("nan"), float("nan")
    if np.ptp(values) == 0:  # every resample has the same mean
        return float(values[0]), float(values[0])
    result = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=resamples,
                             method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)
