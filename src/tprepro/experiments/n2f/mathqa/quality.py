"""How often the gold program of a MathQA record selects its correct option.

TP-N2F (Sec. 4.1, A.1) reports that about 30% of MathQA is noisy: the execution
script fails to pick the right answer from the ground-truth program.

Per mode:
- faithful: numbers with the solver's "1 / 2" rewrites, the faithful executor, the
  solver's positional option list;
- corrected: numbers without the rewrites, the corrected executor, letter-aligned
  options (split_options; a missing letter is an empty position).
Both score with the solver's rule (scoring.authors_score).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tprepro.experiments.n2f.mathqa.executor import Execution, execute
from tprepro.experiments.n2f.mathqa.numbers import extract_numbers
from tprepro.experiments.n2f.mathqa.options import LETTERS, option_values_faithful, parse_options
from tprepro.experiments.n2f.mathqa.scoring import authors_score, candidate_options, strict_correct


@dataclass(frozen=True)
class GoldCheck:
    execution: Execution
    score: float  # authors' credit: 1, 0.5, 0.2 or 0
    strict: bool
    outcome: str  # "correct" or the failure reason


def option_positions(options: str, mode: str) -> list[float | None]:
    """The option values by position, as `mode` scores them."""
    if mode == "faithful":
        return option_values_faithful(options)
    parsed = parse_options(options)
    return [parsed.get(letter) for letter in LETTERS]


def check_gold(row: Mapping[str, str], mode: str, program: str | None = None) -> GoldCheck:
    """Execute `program` (default: the row's linear_formula) and score it against the row."""
    execution = execute(program if program is not None else row["linear_formula"],
                        extract_numbers(row["question"], mode), mode)
    positions = option_positions(row["options"], mode)
    score = authors_score(execution.value, positions, row["correct"])
    strict = strict_correct(execution.value, parse_options(row["options"]), row["correct"])
    candidates = candidate_options(execution.value, positions)
    if score == 1.0:
        outcome = "correct"
    elif not execution.ok:
        outcome = "execution_failed"
    elif not candidates:
        outcome = "no_option_close"
    elif score == 0.5:
        outcome = "two_candidates"
    else:
        outcome = "wrong_option"
    return GoldCheck(execution, score, strict, outcome)


def gold_execution_rate(rows: Iterable[Mapping[str, str]], mode: str = "faithful") -> dict:
    """Share of rows whose gold program selects exactly the correct option, with breakdowns.

    Returns {"rows", "rate" (score == 1), "mean_score" (solver's accuracy with partial
    and chance credit), "strict_rate", "outcomes": Counter of GoldCheck.outcome}.
    """
    outcomes: Counter = Counter()
    total = correct = strict = 0
    score_sum = 0.0
    for row in rows:
        check = check_gold(row, mode)
        total += 1
        correct += check.outcome == "correct"
        strict += check.strict
        score_sum += check.score
        outcomes[check.outcome] += 1
    share = (lambda n: n / total) if total else (lambda n: 0.0)
    return {"rows": total, "rate": share(correct), "mean_score": share(score_sum),
            "strict_rate": share(strict), "outcomes": outcomes}
