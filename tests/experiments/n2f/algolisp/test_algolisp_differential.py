"""Differential test: this package's interpreter against the AlgoLisp reference executor.

Programs: the generator's templates, random well-typed compositions beyond them, mutated
(mostly ill-typed or malformed) variants, and this file's own seeded generator (`_Programs`):
recursion through `self` in every branch position, higher-order functions over nested arrays and
strings, mixed-type reductions, and inputs of the wrong type. Each runs on random inputs in both;
they agree when both fail, or both succeed with equal values (a range and a list never agree).
A case outside the interpreter's documented limits (`DOCUMENTED_LIMITS`) is skipped. The
reference runs with its global result memo disabled (see tests/algolisp_reference.py).
"""

import math
import random

from tprepro.experiments.n2f.algolisp.generator import RANDOM_ARGS, TEMPLATES, mutate_tree, random_inputs, random_tree
from tprepro.experiments.n2f.algolisp.interpreter import DOCUMENTED_LIMITS, ExecutionError, Func, LimitExceeded, Program

import algolisp_reference as reference

# `make install` installs the oracle (`pip install --no-deps program-synthesis==0.1.2`): a missing
# package fails here rather than skipping the differential test.
REF = reference.ReferenceExecutor()
FAILED = reference.FAILED


def _mine(tree, args, inputs):
    try:
        return Program(tree, args).run(inputs)
    except ExecutionError:
        return FAILED


def _mine_or_error(tree, args, inputs):
    try:
        return Program(tree, args).run(inputs), None
    except ExecutionError as exc:
        return FAILED, exc


def _outside_limits(mine_error, reference_error) -> bool:
    """Whether a case hit a documented limit, here or (by the table) in the reference."""
    if isinstance(mine_error, LimitExceeded):
        return not DOCUMENTED_LIMITS[mine_error.limit].same_as_reference
    return any(reference_error in note.reference_errors for note in DOCUMENTED_LIMITS.values())


def _agree(ref, mine) -> bool:
    if ref is FAILED or mine is FAILED:
        return ref is mine
    ref_function = callable(ref) and not isinstance(ref, type)  # the type symbol `int` is a value
    if isinstance(mine, Func) or ref_function:
        return isinstance(mine, Func) and ref_function
    if isinstance(ref, range) != isinstance(mine, range):
        return False
    if isinstance(ref, float) and isinstance(mine, float) and math.isnan(ref) and math.isnan(mine):
        return True
    if type(ref) is list and type(mine) is list and len(ref) == len(mine):
        return all(_agree(x, y) for x, y in zip(ref, mine))  # element by element: functions inside
    return ref == mine


def _compare(cases):
    """(pairs, agreements, reference failures, first disagreements) over (tree, args, inputs)."""
    agreed = failed = 0
    bad = []
    for tree, args, inputs in cases:
        ref, mine = REF.run(tree, args, inputs), _mine(tree, args, inputs)
        ok = _agree(ref, mine)
        agreed += ok
        failed += ref is FAILED
        if not ok and len(bad) < 5:
            bad.append((tree, inputs, ref, mine))
    return len(cases), agreed, failed, bad


def test_templates_agree_with_the_reference():
    rng = random.Random(0)
    cases = []
    for name in sorted(TEMPLATES):
        for _ in range(6):
            _, tree, args, _, sampler = TEMPLATES[name](rng)
            cases += [(tree, args, sampler(rng)) for _ in range(10)]
    n, agreed, failed, bad = _compare(cases)
    assert n >= 1500 and agreed == n, bad
    assert failed < n * 0.05  # the templates' programs almost always run


def test_random_well_typed_programs_agree_with_the_reference():
    rng = random.Random(1)
    cases = []
    for _ in range(900):
        tree = random_tree(rng, 4)
        cases += [(tree, RANDOM_ARGS, random_inputs(rng)) for _ in range(2)]
    n, agreed, failed, bad = _compare(cases)
    assert agreed == n, bad
    assert n * 0.5 < n - failed  # most run to a value, so values are really compared


def test_mutated_programs_agree_with_the_reference():
    rng = random.Random(2)
    cases = []
    for _ in range(700):
        tree = mutate_tree(rng, random_tree(rng, 4))
        cases += [(tree, RANDOM_ARGS, random_inputs(rng)) for _ in range(2)]
    n, agreed, failed, bad = _compare(cases)
    assert failed > n * 0.5  # mostly ill-typed or malformed ...
    assert agreed == n, bad  # ... and both executors reject or compute the same


# ----------------------------------------------------------------------------------------------
# Seeded generated programs

GEN_ARGS = {"a": "int[]", "aa": "int[][]", "b": "int", "s": "string", "ss": "string[]"}
NUMBER_OPS = ["+", "-", "*", "/", "%", "min", "max"]
COMPARISONS = ["<", ">", "<=", ">=", "==", "!="]
SELF_POSITIONS = ("then", "else", "both", "nested", "condition", "argument", "value")


class _Programs:
    """Random programs over GEN_ARGS: compositions by sort that stray to a wrong sort now and then,
    recursive lambdas with `self` in every position, higher-order functions over nested arrays
    and strings, and mixed-type reductions."""

    def __init__(self, rng: random.Random, stray: float = 0.12) -> None:
        self.rng, self.stray = rng, stray
        self.positions: set[str] = set()

    def pick(self, options):
        return self.rng.choice(options)

    def expr(self, sort: str, depth: int, lam: int = 0):
        if self.rng.random() < self.stray:
            sort = self.pick(["int", "bool", "str", "arr", "arrs", "strs"])
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(sort, lam)
        return getattr(self, sort)(depth - 1, lam)

    def leaf(self, sort: str, lam: int):
        lambda_vars = ["arg1", "arg2"][:lam]
        return self.pick({
            "int": ["b", "0", "1", "2", "10", *lambda_vars * 2],
            "bool": ["true", "false"],
            "str": ["s", '"z"', '" "', '""'],
            "arr": ["a", ["array-new", "int"]],
            "arrs": ["aa"],
            "strs": ["ss"],
        }[sort])

    def int(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: [self.pick(NUMBER_OPS), e("int", d, lam), e("int", d, lam)],
            lambda: ["len", e(self.pick(["arr", "arrs", "strs", "str"]), d, lam)],
            lambda: ["head", e(self.pick(["arr", "arr", "strs"]), d, lam)],
            lambda: ["reduce", e(self.pick(["arr", "arrs", "strs"]), d, lam), e("int", d, lam), self.fn2(d, lam)],
            lambda: ["deref", e("arr", d, lam), e("int", d, lam)],
            lambda: ["strlen", e("str", d, lam)],
            lambda: ["invoke1", self.recursive(d, 1), e("int", d, lam)],
            lambda: ["invoke1", ["partial0", e("int", d, lam), self.recursive(d, 2)], e("int", d, lam)],
            lambda: ["reduce", e("arr", d, lam), e("int", d, lam), self.recursive(d, 2)],
            lambda: ["if", e("bool", d, lam), e("int", d, lam), e("int", d, lam)],
        ])()

    def bool(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: [self.pick(COMPARISONS), e("int", d, lam), e(self.pick(["int", "int", "str"]), d, lam)],
            lambda: [self.pick(["&&", "||"]), e("bool", d, lam), e("bool", d, lam)],
            lambda: ["!", e("bool", d, lam)],
            lambda: [self.pick(["is_prime", "is_sorted"]), e(self.pick(["int", "arr"]), d, lam)],
            lambda: ["contains", e("arr", d, lam), e("int", d, lam)],
            lambda: ["==", e(self.pick(["arr", "str", "arrs"]), d, lam), e(self.pick(["arr", "str", "arrs"]), d, lam)],
        ])()

    def str(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: ["str_concat", e("str", d, lam), e("str", d, lam)],
            lambda: ["str_index", e("int", d, lam), e("str", d, lam)],
            lambda: ["head", e("strs", d, lam)],
            lambda: ["reduce", e("strs", d, lam), e("str", d, lam), self.pick(["str_concat", "str_max", "str_min", "+"])],
            lambda: ["if", e("bool", d, lam), e("str", d, lam), e("str", d, lam)],
        ])()

    def arr(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: ["map", e("arr", d, lam), self.fn1(d, lam)],
            lambda: ["map", e(self.pick(["arrs", "strs"]), d, lam), self.pick(["len", "head", "strlen", ["combine", "head", "tail"]])],
            lambda: ["filter", e("arr", d, lam), self.pred(d, lam)],
            lambda: [self.pick(["sort", "reverse", "tail"]), e(self.pick(["arr", "arr", "str"]), d, lam)],
            lambda: ["slice", e("arr", d, lam), e("int", d, lam), e("int", d, lam)],
            lambda: ["append", e("arr", d, lam), e(self.pick(["int", "int", "arr"]), d, lam)],
            lambda: ["range", e("int", d, lam), e("int", d, lam)],
            lambda: ["digits", e("int", d, lam)],
            lambda: ["head", e("arrs", d, lam)],
            lambda: ["reduce", e(self.pick(["arr", "arrs"]), d, lam), e(self.pick(["arr", "arrs"]), d, lam), self.mixed(d, lam)],
            lambda: ["map", e("arr", d, lam), self.recursive(d, 1)],
        ])()

    def arrs(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: ["map", e("arrs", d, lam), self.pick(["reverse", "sort", "tail", ["partial1", e("int", d, lam), "append"]])],
            lambda: ["map", e("arr", d, lam), ["partial0", e("arr", d, lam), "append"]],
            lambda: ["map", e("arr", d, lam), ["lambda1", ["range", "0", "arg1"]]],
            lambda: ["filter", e("arrs", d, lam), ["combine", ["partial0", "1", "<"], "len"]],
            lambda: ["append", e("arrs", d, lam), e("arr", d, lam)],
            lambda: ["reduce", e("arr", d, lam), e("arrs", d, lam), ["lambda2", ["append", "aa", ["range", "0", "arg2"]]]],
        ])()

    def strs(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: ["str_split", e("str", d, lam), self.pick(['" "', '"z"'])],
            lambda: ["map", e("strs", d, lam), [self.pick(["partial0", "partial1"]), e("str", d, lam), "str_concat"]],
            lambda: [self.pick(["sort", "reverse"]), e("strs", d, lam)],
            lambda: ["filter", e("strs", d, lam), ["combine", ["partial1", "2", ">"], "strlen"]],
        ])()

    def fn1(self, d, lam):
        e = self.expr
        return self.pick([
            lambda: [self.pick(["partial0", "partial1"]), e("int", d, lam), self.pick(NUMBER_OPS)],
            lambda: self.pick(["square", "abs", "digits", "is_prime"]),
            lambda: ["lambda1", e("int", d, 1)],
            lambda: ["combine", self.fn1(d - 1, lam), self.fn1(d - 1, lam)],
            lambda: self.recursive(d, 1),
        ])()

    def pred(self, d, lam):
        return self.pick([
            lambda: [self.pick(["partial0", "partial1"]), self.expr("int", d, lam), self.pick(COMPARISONS)],
            lambda: "is_prime",
            lambda: ["lambda1", self.expr("bool", d, 1)],
            lambda: ["combine", ["partial0", "0", "=="], ["partial1", "2", "%"]],
        ])()

    def fn2(self, d, lam):
        return self.pick([
            lambda: self.pick(["+", "*", "-", "min", "max", "str_concat", "append"]),
            lambda: ["lambda2", self.expr("int", d, 2)],
            lambda: ["combine", self.fn1(d - 1, lam), self.pick(["+", "*"])],
            lambda: self.recursive(d, 2),
        ])()

    def mixed(self, d, lam):
        """A combiner for a reduction whose accumulator and items may differ in type."""
        return self.pick(["append", "+", self.fn2(d, lam), ["partial0", self.expr("arr", d, lam), "append"]])

    def recursive(self, d, params: int):
        """A lambda recurring through `self` on a shrinking `arg1`, `self` placed anywhere."""
        position = self.pick(SELF_POSITIONS)
        self.positions.add(position)
        base, smaller = self.pick([
            (["<=", "arg1", "0"], ["-", "arg1", self.pick(["1", "2"])]),
            (["<", "arg1", "10"], ["/", "arg1", "10"]),
            (["==", "arg1", "0"], ["/", "arg1", "2"]),
        ])
        args = [smaller] if params == 1 else [smaller, self.pick(["arg2", ["+", "arg2", "1"], ["%", "arg2", "arg1"]])]
        call = ["self", *args]
        done = self.pick(["arg1", "0", ["*", "arg1", "2"]] + (["arg2"] if params == 2 else []))
        if position in ("nested", "argument"):
            call = self.pick([["+", "arg1", call], ["max", call, "1"], ["reduce", ["digits", call], "0", "+"]])
        if position == "value":
            call = ["invoke1", "self", smaller] if params == 1 else ["reduce", ["range", "0", "1"], smaller, "self"]
        body = {
            "then": ["if", ["!", base], call, done],
            "both": ["if", base, done, ["if", ["==", ["%", "arg1", "2"], "0"], call, call]],
            "condition": ["if", base, done, ["if", ["<", call, "5"], "1", "2"]],
        }.get(position, ["if", base, done, call])
        return ["lambda1" if params == 1 else "lambda2", body]


def _generated_inputs(rng: random.Random) -> dict:
    """Inputs for GEN_ARGS; one in ten binds a value of another type to one of them."""
    words = ["ab", "cat", "z", "dog", "x", "a", "zz"]
    inputs = {
        "a": [rng.randint(-5, 30) for _ in range(rng.randint(0, 6))],
        "aa": [[rng.randint(-3, 12) for _ in range(rng.randint(0, 4))] for _ in range(rng.randint(0, 4))],
        "b": rng.choice([rng.randint(-3, 40), rng.randint(0, 130)]),
        "s": " ".join(rng.choice(words) for _ in range(rng.randint(0, 4))),
        "ss": [rng.choice(words) for _ in range(rng.randint(0, 4))],
    }
    if rng.random() < 0.1:
        name, other = rng.sample(sorted(inputs), 2)
        inputs[name] = inputs[other]
    return inputs


def _generated_cases(seed: int, programs: int):
    rng = random.Random(seed)
    gen = _Programs(rng)
    cases = []
    for _ in range(programs):
        tree = gen.expr(rng.choice(["int", "int", "bool", "str", "arr", "arr", "arrs", "strs"]), rng.randint(2, 4))
        if rng.random() < 0.15:
            tree = mutate_tree(rng, tree)
        cases += [(tree, GEN_ARGS, _generated_inputs(rng)) for _ in range(2)]
    return cases, gen.positions


def _compare_within_limits(cases):
    """(compared, agreed, reference values, skipped, first disagreements)."""
    compared = agreed = values = skipped = 0
    bad = []
    for tree, args, inputs in cases:
        ref = REF.run(tree, args, inputs)
        mine, error = _mine_or_error(tree, args, inputs)
        if _outside_limits(error, REF.last_error):
            skipped += 1
            continue
        compared += 1
        values += ref is not FAILED
        ok = _agree(ref, mine)
        agreed += ok
        if not ok and len(bad) < 5:
            bad.append((tree, inputs, ref, REF.last_error, mine, error))
    return compared, agreed, values, skipped, bad


def test_generated_programs_agree_with_the_reference_outside_the_documented_limits():
    cases, positions = _generated_cases(seed=26, programs=1000)
    compared, agreed, values, skipped, bad = _compare_within_limits(cases)
    assert positions == set(SELF_POSITIONS)
    assert compared >= 1000 and skipped < len(cases) * 0.05
    assert agreed == compared, bad
    assert compared * 0.25 < values < compared * 0.85  # both accepted and rejected programs are compared
