"""Executors never raise (issue 10): every MathQA operation on extreme numbers, seeded random MathQA
programs, and seeded random AlgoLisp programs on extreme inputs."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from tprepro.experiments.n2f.algolisp.interpreter import BUILTINS, CONSTANTS, ExecutionError, Limits, run
from tprepro.experiments.n2f.mathqa.executor import Execution, execute
from tprepro.experiments.n2f.mathqa.operations import CONSTANT_LIST, EXTRA_CONSTANTS, MODES, OPERATIONS, OperationFailure

EXTREMES = (math.inf, -math.inf, math.nan, 1e308, -1e308, 1e200, -1e200, 1e16, 0.0, -0.0, 5e-324, 1.0, -1.0,
            0.5, 19.0, 99.0, 171.0, 1000.0, -1e6, 1e-3)


def test_sum_consecutive_number_up_to_1e200_fails_cleanly():
    outcome = execute("sum_consecutive_number(n0,n1)", [1, 1e200])  # faithful: the step is skipped
    assert outcome.value is None and outcome.failure == "no step succeeded"
    assert "int too large to convert to float" in outcome.step_failures[0]
    strict = execute("sum_consecutive_number(n0,n1)", [1, 1e200], mode="corrected")
    assert strict.value is None and "sum_consecutive_number" in strict.failure


def test_an_exact_result_beyond_the_float_range_fails_cleanly():
    with pytest.raises(OperationFailure, match="permutation"):
        OPERATIONS["permutation"].apply([1000.0, 1000.0], "corrected")  # 1000! as an int
    assert execute("permutation(n0,n1)", [1000, 1000], mode="corrected").failure is not None


def test_faithful_permutation_of_a_huge_negative_k_is_the_float_it_underflows_to():
    assert OPERATIONS["permutation"].apply([19.0, -1e9], "faithful") == 0.0  # 19! / (1e9 + 19)!: 0.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_on_every_extreme_tuple_returns_a_float_or_fails_cleanly(name, mode):
    operation = OPERATIONS[name]
    for args in itertools.product(EXTREMES, repeat=operation.arity):
        try:
            value = operation.apply(list(args), mode)
        except OperationFailure:
            continue
        assert isinstance(value, float), (name, args, value)
        if mode == "corrected":
            assert math.isfinite(value), (name, args, value)


def random_argument(rng: random.Random, step: int) -> str:
    kind = rng.random()
    if kind < 0.45:
        return f"n{rng.randrange(6)}"
    if kind < 0.75 and step:
        return f"#{rng.randrange(step + 2)}"  # sometimes past the end
    return rng.choice((*CONSTANT_LIST, *EXTRA_CONSTANTS, "const_1e400", "const_x"))


def random_formula(rng: random.Random) -> str:
    names = sorted(OPERATIONS) + ["not_an_operation"]
    steps = []
    for step in range(rng.randint(1, 8)):
        name = rng.choice(names)
        arity = OPERATIONS[name].arity if name in OPERATIONS else 2
        arity += rng.choice((0, 0, 0, 0, -1, 1))  # sometimes the wrong number of arguments
        steps.append(f"{name}({','.join(random_argument(rng, step) for _ in range(max(arity, 0)))})")
    return "|".join(steps)


@pytest.mark.parametrize("mode", MODES)
def test_random_programs_on_extreme_numbers_never_raise(mode):
    rng = random.Random(10)
    outcomes = {"ok": 0, "failed": 0}
    for _ in range(3000):
        program = random_formula(rng)
        numbers = [rng.choice((*EXTREMES, rng.uniform(-1e4, 1e4))) for _ in range(rng.randrange(7))]
        outcome = execute(program, numbers, mode=mode)
        assert isinstance(outcome, Execution), program
        if outcome.ok:
            outcomes["ok"] += 1
            assert isinstance(outcome.value, float)
            assert mode == "faithful" or math.isfinite(outcome.value), (program, numbers)
        else:
            outcomes["failed"] += 1
            assert outcome.failure
    assert outcomes["ok"] > 100 and outcomes["failed"] > 100, outcomes  # both paths really exercised


# ---- AlgoLisp ------------------------------------------------------------------------------------------

INT_EXTREMES = (0, 1, -1, 2, 7, -1000, 10**6, 2**62, -(2**62), 10**30)


def random_tree(rng: random.Random, depth: int):
    """A random expression over the DSL's builtins and constants (often ill-typed, on purpose)."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(["a", "b", "arg1", *sorted(CONSTANTS), str(rng.choice(INT_EXTREMES))])
    head = rng.choice([*sorted(BUILTINS), "if", "lambda1"])
    arity = 3 if head == "if" else 1 if head == "lambda1" else BUILTINS[head].arity
    return [head, *(random_tree(rng, depth - 1) for _ in range(arity))]


def test_random_algolisp_programs_on_extreme_inputs_raise_only_execution_error():
    rng = random.Random(11)
    limits = Limits(timeout_s=0.5)
    outcomes = {"ok": 0, "failed": 0}
    for _ in range(1500):
        tree = random_tree(rng, rng.randint(1, 4))
        inputs = {"a": rng.choice(INT_EXTREMES), "b": [rng.choice(INT_EXTREMES) for _ in range(rng.randrange(5))]}
        try:
            run(tree, inputs, limits=limits)
            outcomes["ok"] += 1
        except ExecutionError:
            outcomes["failed"] += 1
    assert outcomes["ok"] > 20 and outcomes["failed"] > 20, outcomes
