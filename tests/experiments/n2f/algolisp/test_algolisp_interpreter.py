"""The AlgoLisp interpreter: semantics of the DSL and clean failure on adversarial programs."""

import time

import pytest

from tprepro.experiments.n2f.algolisp.interpreter import (
    DOCUMENTED_LIMITS,
    ExecutionError,
    LimitExceeded,
    Limits,
    RejectedProgram,
    compile_program,
    run,
    run_tests,
)
from tprepro.experiments.n2f.algolisp.metrics import fraction_passed
from tprepro.experiments.n2f.algolisp.program import tree_to_tuples

from helpers import REPO

THOUSAND = ["*", "10", ["*", "10", "10"]]
FACTORIAL = ["invoke1", ["lambda1", ["if", ["==", "arg1", "1"], "1", ["*", ["self", ["-", "arg1", "1"]], "arg1"]]], "a"]


@pytest.mark.parametrize(
    "tree, inputs, expected",
    [
        (["map", "a", ["partial1", "b", "-"]], {"a": [5, 7], "b": 2}, [3, 5]),
        (["map", "a", ["partial0", "b", "-"]], {"a": [5, 7], "b": 2}, [-3, -5]),
        (FACTORIAL, {"a": 6}, 720),
        (["/", "a", "2"], {"a": -7}, -4),  # floor division on ints
        (["floor", ["sqrt", "a"]], {"a": 17}, 4),
        (["reduce", "a", "0", ["lambda2", ["+", ["*", "arg1", "10"], "arg2"]]], {"a": [1, 2, 3]}, 123),
        (["map", "a", ["combine", ["partial0", "2", "*"], ["partial1", "1", "+"]]], {"a": [0, 4]}, [2, 10]),
        (["digits", "a"], {"a": -905}, [9, 0, 5]),
        (["filter", "a", "is_prime"], {"a": [0, 1, 2, 9, 11, 25]}, [2, 11]),
        (["is_sorted", "a"], {"a": [1, 1, 3]}, True),
        (["contains", "a", "b"], {"a": [1, 3], "b": 2}, False),
        (["str_split", "s", '" "'], {"s": " ab  c "}, ["ab", "c"]),
        (["str_index", "1", "s"], {"s": "xyz"}, "y"),
        (["reduce", ["str_split", "s", '" "'], '""', "str_max"], {"s": "b c a"}, "c"),
        (["dict-keys", ["dict-insert", ["dict-insert", ["dict-new", "int", "int"], "b", "1"], "a", "2"]], {"a": 3, "b": 1}, [1, 3]),
        (["slice", "a", ["-", "0", "10"], "2"], {"a": [4, 5, 6]}, [4, 5]),
        (["append", ["array-new", "int"], "a"], {"a": 3}, [3]),
        (["if", ["||", "true", ["==", ["head", "a"], "0"]], "1", "2"], {"a": [0]}, 1),
    ],
)
def test_semantics(tree, inputs, expected):
    assert run(tree, inputs) == expected


def test_range_is_not_a_list_and_cannot_be_appended_to():
    assert run(["range", "0", "a"], {"a": 3}) != [0, 1, 2]
    assert run(["reverse", ["range", "0", "a"]], {"a": 3}) == [2, 1, 0]
    assert run_tests(["range", "0", "a"], [{"input": {"a": 2}, "output": [0, 1]}]) == [False]
    with pytest.raises(ExecutionError):
        run(["append", ["range", "0", "a"], "1"], {"a": 3})


def test_recursion_depth_matches_the_reference_bound():
    assert run(FACTORIAL, {"a": 110}) > 0
    with pytest.raises(ExecutionError, match="call depth"):
        run(FACTORIAL, {"a": 111})


ADVERSARIAL = [
    (["invoke1", ["lambda1", ["self", "arg1"]], "a"], {"a": 1}),  # infinite self recursion
    (["invoke1", ["lambda1", ["+", ["self", "arg1"], ["self", "arg1"]]], "a"], {"a": 1}),
    (["range", "0", "1000000000"], {}),  # huge range
    (["len", ["range", "0", "inf"]], {}),
    (["pow", "10", "1000000000"], {}),  # huge number
    (["invoke1", ["lambda1", ["if", ["==", "arg1", "0"], '"z"', ["str_concat", ["self", ["-", "arg1", "1"]], ["self", ["-", "arg1", "1"]]]]], "a"], {"a": 100}),
    (["reduce", ["range", "0", THOUSAND], "0", ["lambda2", ["reduce", ["range", "0", THOUSAND], "arg1", "+"]]], {}),  # 10^6 steps
    (["+", "a"], {"a": 1}),  # wrong arity
    (["lambda1"], {}),
    (["foo", "a"], {"a": 1}),  # unknown function
    (["+", "a", "zz"], {"a": 1}),  # unknown symbol
    (["+", "a", '"z"'], {"a": 1}),  # type error
    (["if", "a", "1", '"z"'], {"a": True}),
    (["len", "s"], {"s": "abc"}),  # len is for arrays
    (["head", "a"], {"a": []}),
    (["deref", "a", "10"], {"a": [1]}),
    (["/", "a", "0"], {"a": 1}),
    (["sqrt", ["-", "0", "1"]], {}),
    (["digits", "inf"], {}),
    (["is_prime", "1000000000"], {}),  # its internal range exceeds 1000 elements
    ("arg1", {}),
    (["self", "1"], {}),
    ([], {}),
    ([["+"], "1"], {}),
    ([1, 2], {}),
    ("+", {}),  # a function is not a value
    (["partial0", "1", "+"], {}),
    (["map", "a", ["lambda1", "arg2"]], {"a": [1]}),
    (["a", "1"], {"a": 1}),
]


@pytest.mark.parametrize("tree, inputs", ADVERSARIAL)
def test_adversarial_programs_fail_cleanly_within_bounds(tree, inputs):
    start = time.monotonic()
    with pytest.raises(ExecutionError):
        run(tree, inputs, limits=Limits(timeout_s=1.0))
    assert time.monotonic() - start < 10.0  # a safety bound, not a speed claim: the 1 s limit holds, with margin


def test_deep_nesting_is_refused_and_wall_time_is_bounded():
    tree = "a"
    for _ in range(5000):
        tree = ["+", "1", tree]
    with pytest.raises(ExecutionError, match="nested deeper"):
        run(tree, {"a": 1})
    heavy = ["reduce", ["range", "0", THOUSAND], "0", ["lambda2", ["reduce", ["range", "0", THOUSAND], "arg1", "+"]]]
    start = time.monotonic()
    with pytest.raises(ExecutionError, match="time limit"):
        run(heavy, {}, limits=Limits(max_steps=10**9, timeout_s=0.2))
    assert time.monotonic() - start < 1.0


def test_compiled_program_reuse_and_input_isolation():
    program = compile_program(["dict-keys", ["dict-insert", "d", "1", "2"]], {"d": "dict<int,int>"})
    inputs = {"d": {}}
    assert program.run(inputs) == [1]
    assert inputs == {"d": {}}  # the run worked on a copy
    with pytest.raises(ExecutionError, match="no value"):
        program.run({})
    assert run_tests(["+", "a"], [{"input": {"a": 1}, "output": 1}] * 3) == [False] * 3


GCD = ["invoke1", ["partial0", "a", ["lambda2", ["if", ["==", "arg2", "0"], "arg1", ["self", "arg2", ["%", "arg1", "arg2"]]]]], "b"]
DIGIT_ROOT = ["invoke1", ["lambda1", ["if", ["<", "arg1", "10"], "arg1", ["self", ["reduce", ["digits", "arg1"], "0", "+"]]]], "a"]
FIRST_DIGITS = ["map", "arr", ["lambda1", ["if", ["<", "arg1", "10"], "arg1", ["self", ["/", "arg1", "10"]]]]]


@pytest.mark.parametrize(
    "tree, args, inputs, expected",
    [
        (GCD, {"a": "int", "b": "int"}, {"a": 12, "b": 18}, 6),
        (DIGIT_ROOT, {"a": "int"}, {"a": 9875}, 2),
        (FIRST_DIGITS, {"arr": "int[]"}, {"arr": [5, 123, 77]}, [5, 1, 7]),
        (["len", "arr"], {"arr": "int[]"}, {"arr": "abc"}, 3),  # an input of the wrong type runs as in Python
        (["reduce", "arr", '""', "str_concat"], {"arr": "string[]"}, {"arr": "xyz"}, "xyz"),
    ],
)
def test_self_in_an_else_branch_and_inputs_of_the_wrong_type_run_as_in_the_reference(tree, args, inputs, expected):
    assert compile_program(tree, args).run(inputs) == expected


@pytest.mark.parametrize(
    "tree, args",
    [
        (["map", "aa", "head"], {"aa": "int[][]"}),
        (["map", "aa", "reverse"], {"aa": "int[][]"}),
        (["reduce", "arr", ["array-new", "int"], "append"], {"arr": "int[]"}),
        (["reduce", "arr", "arr", "append"], {"arr": "int[]"}),
        (["map", "arr", ["partial0", "arr", "append"]], {"arr": "int[]"}),
        (["invoke1", ["lambda1", ["if", ["<", "arg1", "10"], ["self", ["/", "arg1", "10"]], "arg1"]], "a"], {"a": "int"}),
    ],
)
def test_programs_the_reference_type_check_rejects_are_rejected_and_score_zero(tree, args):
    with pytest.raises(RejectedProgram, match="type check"):
        compile_program(tree, args)
    inputs = {name: {"int[][]": [[1]], "int[]": [1]}.get(t, 1) for name, t in args.items()}
    record = {"args": args, "tests": [{"input": inputs, "output": [1]}]}
    assert fraction_passed(record, tree_to_tuples(tree, 3)) == 0.0


def test_limits_are_reported_by_their_documented_name():
    with pytest.raises(LimitExceeded) as hit:
        run(["pow", "10", "1000000000"], {})
    assert hit.value.limit == "max_int_bits" and hit.value.limit in DOCUMENTED_LIMITS
    with pytest.raises(LimitExceeded) as hit:
        run(FACTORIAL, {"a": 200})
    assert hit.value.limit == "max_call_depth" and DOCUMENTED_LIMITS["max_call_depth"].same_as_reference
    assert set(DOCUMENTED_LIMITS) == set(Limits.__dataclass_fields__)


def test_the_guide_shows_the_limits_table_of_the_code():
    """The N2F guide's limits table is `Limits` with `DOCUMENTED_LIMITS`, row for row."""
    from dataclasses import fields

    from tprepro.experiments.n2f.algolisp.interpreter import DOCUMENTED_LIMITS, Limits

    guide = REPO / "src/tprepro/experiments/n2f/README.md"
    rows = [line for line in guide.read_text(encoding="utf-8").splitlines()
            if line.startswith(tuple(f"| `{f.name}` |" for f in fields(Limits)))]
    expected = [f"| `{f.name}` | {f.default:,} | {DOCUMENTED_LIMITS[f.name].ours} | "
                f"{DOCUMENTED_LIMITS[f.name].reference} |" for f in fields(Limits)]
    assert rows == expected
