"""Execution accuracy as the released solver scores it, a strict variant, and operation match.

The released solver (`solve.py`, `solve_procedure`, n_best = 1 as TP-N2F ran it):

- thresholds: 0.1, 1 and, when the largest parsed option m is non-zero,
  min(m / 4 + 1, 10); tried in that order;
- candidates at a threshold t: every option (by position) whose value is within t
  (strictly) of the program's value;
- the first threshold with any candidate decides: it is accepted when it has
  fewer than 3 candidates, otherwise the problem gets no candidate set at all
  (larger thresholds only add candidates);
- score: no candidate set (including a failed execution or a non-finite value)
  earns 0.2, the "chance" credit; a candidate set holding the correct option earns
  1 / (set size), i.e. 1 or 0.5; otherwise 0.

`strict_correct` is this project's stricter reading: the value is finite, exactly one
option is closest, that option is within `rel_tol` (relative, with a 1e-9 floor) and
it is the correct letter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from tprepro.experiments.n2f.tuples import parse_program

CHANCE_CREDIT = 0.2
STRICT_REL_TOL = 0.01


def thresholds(option_values: Sequence[float | None]) -> list[float]:
    """The solver's closeness thresholds for these options."""
    largest = 0.0
    for value in option_values:
        if value is not None and value > largest:
            largest = value
    return [0.1, 1.0] + ([min(largest / 4 + 1, 10.0)] if largest != 0 else [])


def candidate_options(value: float | None, option_values: Sequence[float | None]) -> list[int]:
    """Positions of the options the solver keeps for `value` ([] when none is accepted)."""
    if value is None or not math.isfinite(value):
        return []
    for threshold in thresholds(option_values):
        close = [j for j, option in enumerate(option_values)
                 if option is not None and abs(value - option) < threshold]
        if close:
            return close if len(close) < 3 else []
    return []


def authors_score(value: float | None, option_values: Sequence[float | None], correct: str) -> float:
    """The solver's credit for one problem: 1, 0.5, 0.2 (no candidate) or 0."""
    candidates = candidate_options(value, option_values)
    if not candidates:
        return CHANCE_CREDIT
    index = ord(correct.strip().lower()) - ord("a")
    return 1.0 / len(candidates) if index in candidates else 0.0


def strict_correct(value: float | None, options: Mapping[str, float | None], correct: str,
                   rel_tol: float = STRICT_REL_TOL) -> bool:
    """True when exactly one option is closest to `value`, within rel_tol, and it is `correct`."""
    if value is None or not math.isfinite(value):
        return False
    distances = {letter: abs(value - option) for letter, option in options.items()
                 if option is not None and math.isfinite(option)}
    if not distances:
        return False
    best = min(distances.values())
    closest = [letter for letter, distance in distances.items() if distance == best]
    if len(closest) != 1:
        return False
    target = options[closest[0]]
    return best <= max(rel_tol * abs(target), 1e-9) and closest[0] == correct.strip().lower()


def operation_match(pred: str | Sequence[Sequence[str]], gold: str | Sequence[Sequence[str]]) -> bool:
    """Exact match of two tuple programs (strings via format_program, or tuple lists)."""
    as_tuples = lambda p: [tuple(t) for t in (parse_program(p) if isinstance(p, str) else p)]  # noqa: E731
    return as_tuples(pred) == as_tuples(gold)
