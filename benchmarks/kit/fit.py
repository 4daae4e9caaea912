"""The least squares every job-rate benchmark fits: a job's seconds (or bytes) as a fixed part + a rate x its size."""

from __future__ import annotations

from tprepro.plan.speeds import DataRate


def fit(points: list[tuple[int, float]]) -> DataRate:
    """Least squares of CPU seconds on problems (a fixed part >= 0, a rate >= 0)."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    rate = max(sum((x - mean_x) * (y - mean_y) for x, y in points) / spread, 0.0)
    fixed = mean_y - rate * mean_x
    if fixed < 0:  # start-up cannot be negative: the line through the origin instead
        fixed, rate = 0.0, sum(x * y for x, y in points) / sum(x * x for x, _ in points)
    ordered = sorted(points)
    return DataRate(fixed, rate, tuple(x for x, _ in ordered), tuple(round(y, 3) for _, y in ordered))
