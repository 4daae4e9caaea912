"""Numbers, executor, scoring and the gold execution rate on real MathQA data."""

import math

import pytest

from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.executor import execute
from tprepro.experiments.n2f.mathqa.numbers import extract_numbers
from tprepro.experiments.n2f.mathqa.program import formula_to_program
from tprepro.experiments.n2f.mathqa.quality import check_gold, gold_execution_rate
from tprepro.experiments.n2f.mathqa.release import load_release
from tprepro.experiments.n2f.mathqa.scoring import authors_score, candidate_options, operation_match, strict_correct, thresholds

from helpers import release_file



@pytest.fixture(scope="module")
def dev_rows():
    return load_release(release_file("mathqa/dev.json"), "dev")


def test_numbers_follow_the_solver():
    assert extract_numbers("in a school of 650 boys , 44 % of muslims") == [650, 44]
    assert extract_numbers("rs . 8,000 at 2.5 % for - 3 years") == [8000, 2.5, -3]
    assert extract_numbers("a is 1 / 2 of b") == [0.5]  # faithful substring rewrite
    assert extract_numbers("a is 1 / 2 of b", "corrected") == [1, 2]
    assert extract_numbers("11 / 2 of 6") == [10.5, 6]  # "1 / 2" inside "11 / 2"
    assert extract_numbers("x² = 4 , fifty , 50% , 3/4") == [4, 0.75]


def test_numbers_match_the_gold_formulas(dev_rows):
    """Without the solver's rewrite every n<i> of every dev formula exists; with it some do not."""
    import re

    def misses(mode):
        return sum(max(map(int, re.findall(r"n(\d+)", r["linear_formula"])), default=-1)
                   >= len(extract_numbers(r["question"], mode)) for r in dev_rows)

    assert misses("corrected") == 0
    assert misses("faithful") > 0


def test_execute_accepts_formula_tuples_and_program_string():
    numbers = [650, 44, 28, 10]
    formula = "add(n1,n2)|add(n3,#0)|subtract(const_100,#1)|multiply(n0,#2)|divide(#3,const_100)"
    for program in (formula, formula_to_program(formula)):
        result = execute(program, numbers, "corrected")
        assert result.ok and result.value == pytest.approx(117)
        assert result.results == pytest.approx((72, 82, 18, 11700, 117))


def test_faithful_skips_failed_steps_and_renumbers_memory():
    # step 0 fails (power exponent >= 10), so "#0" in step 2 is step 1's result
    result = execute("power(n0,n1)|add(n0,n0)|multiply(#0,const_2)", [2, 12], "faithful")
    assert result.results == (None, 4.0, 8.0) and result.value == 8.0
    assert result.step_failures and "power" in result.step_failures[0]
    strict = execute("power(n0,n1)|add(n0,n0)|multiply(#0,const_2)", [2, 12], "corrected")
    assert strict.value == 8192.0


def test_faithful_answer_is_last_successful_step():
    result = execute("add(n0,n1)|divide(#0,const_0_0)", [2, 3], "faithful")
    assert result.value == 5.0 and result.results == (5.0, None)
    assert not execute("add(n0,n1)|divide(#0,const_0_0)", [2, 3], "corrected").ok


@pytest.mark.parametrize("program, numbers", [
    ("add(n0,n5)", [1, 2]),  # number past the end
    ("sqrt(n0)", [-4]),  # domain
    ("factorial(n0)", [1e9]),  # bounded, no hang
    ("power(n0,n1)", [10, 1e6]),  # overflow
    ("sum_consecutive_number(n0,n1)", [0, 1e18]),  # closed form, no hang
    ("add(n0", [1]),  # malformed
    ("add(n0,#3)", [1]),  # bad reference
    ("frobnicate(n0,n1)", [1, 2]),
    ("multiply(const_1,const_2)", []),  # no number of the problem
    ([("add", "n0", "#7")], [1]),
    ("", [1]),
])
@pytest.mark.parametrize("mode", ["faithful", "corrected"])
def test_failures_are_clean(program, numbers, mode):
    result = execute(program, numbers, mode)
    if result.ok:  # faithful may still answer from an earlier step; never inf in corrected
        assert mode == "faithful" or math.isfinite(result.value)
    else:
        assert result.value is None and result.failure


def test_bounded_programs_stay_fast():
    result = execute("|".join(["factorial(n0)"] + ["factorial(#%d)" % i for i in range(20)]), [99], "faithful")
    assert result.ok  # later factorials of 99! are refused (>= 100) and skipped
    assert execute("sum_consecutive_number(n0,n1)", [0, 1e18], "faithful").ok


def test_unknown_mode_raises():
    with pytest.raises(TpreproError, match="mode"):
        execute("add(n0,n1)", [1, 2], "exact")


def test_authors_scoring_rule():
    options = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert thresholds(options) == [0.1, 1.0, 10.0]  # min(50 / 4 + 1, 10)
    assert thresholds([1.0, 2.0, None]) == [0.1, 1.0, 1.5]
    assert thresholds([-3.0, None]) == [0.1, 1.0]
    assert candidate_options(20.05, options) == [1]
    assert authors_score(20.05, options, "b") == 1.0
    assert authors_score(20.05, options, "c") == 0.0
    assert authors_score(25.0, options, "b") == 0.5  # within 10 of both 20 and 30
    assert authors_score(None, options, "b") == 0.2  # failed execution: chance credit
    assert authors_score(1000.0, options, "b") == 0.2  # nothing close
    assert candidate_options(0.75, [0.7, 0.72, 0.8, 5.0, 9.0]) == []  # three within 0.1: rejected
    assert authors_score(float("nan"), options, "a") == 0.2


def test_strict_scoring():
    options = {"a": 10.0, "b": 20.0, "c": 30.0, "d": None, "e": 20.0}
    assert strict_correct(10.05, options, "a")
    assert not strict_correct(10.5, options, "a")  # outside 1%
    assert not strict_correct(20.0, options, "b")  # two closest options
    assert not strict_correct(None, options, "a")
    assert strict_correct(10.5, options, "a", rel_tol=0.1)


def test_operation_match():
    gold = formula_to_program("add(n0,n1)|sqrt(#0)")
    assert operation_match(gold, [("add", "n0", "n1"), ("sqrt", "#0", "<none>")])
    assert not operation_match(gold, formula_to_program("add(n1,n0)|sqrt(#0)"))


def test_gold_check_on_real_records(dev_rows):
    first = check_gold(dev_rows[0], "faithful")
    assert first.execution.value == 625.0 and first.score == 1.0 and first.outcome == "correct"
    assert check_gold(dev_rows[5], "corrected").execution.value == pytest.approx(117)


def test_gold_execution_rate_on_dev(dev_rows):
    """Measured on dev: faithful 0.607 exact (solver accuracy 0.684), corrected 0.629 (0.701)."""
    faithful = gold_execution_rate(dev_rows, "faithful")
    corrected = gold_execution_rate(dev_rows, "corrected")
    assert faithful["rows"] == len(dev_rows) == 4475
    assert 0.55 <= faithful["rate"] <= 0.65 and 0.64 <= faithful["mean_score"] <= 0.72
    assert 0.58 <= corrected["rate"] <= 0.68
    assert corrected["outcomes"]["execution_failed"] < faithful["outcomes"]["execution_failed"]
    assert sum(faithful["outcomes"].values()) == 4475
