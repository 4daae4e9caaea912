"""AlgoLisp metrics (TP-N2F Sec. 4.2): Acc, 50p-Acc and M-Acc on the full and cleaned test sets.

Per example, the predicted command sequence (tuples or their `format_program` string) is turned
back into a tree (`program.tuples_to_tree`, shared references allowed) and run on the record's
tests; an unparsable prediction, or one the reference executor's type check rejects (the
interpreter's `RejectedProgram`, as in the authors' scoring), passes none. Acc: all tests pass; 50p-Acc: at least
half pass; M-Acc: the tuple sequence equals the gold one exactly. The cleaned set keeps the
records whose gold program passes all of its tests (`is_clean`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tprepro.experiments.n2f.algolisp.interpreter import Limits, run_tests
from tprepro.experiments.n2f.algolisp.program import tree_to_tuples, tuples_to_tree
from tprepro.experiments.n2f.tuples import parse_program
from tprepro.errors import TpreproError

ARITY = 3


def _as_tuples(program) -> list[tuple[str, ...]]:
    if isinstance(program, str):
        return parse_program(program, arity=ARITY)
    return [tuple(item) for item in program]


def fraction_passed(record: dict, predicted, limits: Limits | None = None) -> float:
    """Share of the record's tests that `predicted` (tuples or string) passes; 0 if unparsable."""
    tests = record["tests"]
    if not tests:
        return 0.0
    try:
        tree = tuples_to_tree(_as_tuples(predicted), allow_shared=True)
    except TpreproError:
        return 0.0
    return sum(run_tests(tree, tests, record["args"], limits)) / len(tests)


def exact_match(record: dict, predicted) -> bool:
    """Whether the predicted tuples equal the gold command sequence."""
    try:
        return _as_tuples(predicted) == tree_to_tuples(record["short_tree"], ARITY)
    except TpreproError:
        return False


def is_clean(record: dict, limits: Limits | None = None) -> bool:
    """The gold program passes all of its tests."""
    return bool(record["tests"]) and all(run_tests(record["short_tree"], record["tests"], record["args"], limits))


def score_example(record: dict, predicted, limits: Limits | None = None) -> dict:
    """{'passed': fraction, 'acc', 'acc50', 'exact'} of one prediction."""
    passed = fraction_passed(record, predicted, limits)
    return {"passed": passed, "acc": passed == 1.0, "acc50": passed >= 0.5, "exact": exact_match(record, predicted)}


def aggregate(scores: Sequence[dict]) -> dict:
    """{'n', 'acc', 'acc50', 'm_acc'} (fractions in [0, 1]) over example scores."""
    n = len(scores)
    if n == 0:
        return {"n": 0, "acc": 0.0, "acc50": 0.0, "m_acc": 0.0}
    return {
        "n": n,
        "acc": sum(s["acc"] for s in scores) / n,
        "acc50": sum(s["acc50"] for s in scores) / n,
        "m_acc": sum(s["exact"] for s in scores) / n,
    }


def evaluate(records: Sequence[dict], predictions: Sequence, limits: Limits | None = None) -> dict:
    """{'full': aggregate, 'cleaned': aggregate} of predictions aligned with records."""
    if len(records) != len(predictions):
        raise TpreproError(f"{len(records)} records but {len(predictions)} predictions")
    scores = [score_example(r, p, limits) for r, p in zip(records, predictions)]
    clean = [s for r, s in zip(records, scores) if is_clean(r, limits)]
    return {"full": aggregate(scores), "cleaned": aggregate(clean)}
