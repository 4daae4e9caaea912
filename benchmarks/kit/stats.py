"""Mean, sd and the 95% t interval of the mean; paired over seeds, the interval of the differences."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from scipy import stats


def interval(values: Sequence[float]) -> dict:
    """Mean, sd and the 95% t interval of the mean of `values` (sd and interval NaN for one value)."""
    n, mean = len(values), statistics.mean(values)
    sd = statistics.stdev(values) if n > 1 else float("nan")
    half = stats.t.ppf(0.975, n - 1) * sd / n ** 0.5 if n > 1 else float("nan")
    return {"mean": mean, "sd": sd, "low": mean - half, "high": mean + half, "n": n}


def paired_interval(a: Mapping[int, float], b: Mapping[int, float]) -> dict:
    """The interval of b − a over the seeds both have (`a`, `b`: value per seed)."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise ValueError("no seed in both")
    return interval([b[s] - a[s] for s in seeds])
