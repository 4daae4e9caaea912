"""Differential test: this package's interpreter against the AlgoLisp reference executor.

Programs: the generator's templates, random well-typed compositions beyond them, and mutated
(mostly ill-typed or malformed) variants. Each runs on random inputs in both; they agree when
both fail, or both succeed with equal values (a range and a list never agree). The reference
runs with its global result memo disabled (see tests/algolisp_reference.py).
"""

import math
import random

import pytest

from tprepro.experiments.n2f.algolisp.generator import RANDOM_ARGS, TEMPLATES, mutate_tree, random_inputs, random_tree
from tprepro.experiments.n2f.algolisp.interpreter import ExecutionError, Func, Program

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


def _agree(ref, mine) -> bool:
    if ref is FAILED or mine is FAILED:
        return ref is mine
    if isinstance(mine, Func):
        return callable(ref)
    if isinstance(ref, range) != isinstance(mine, range):
        return False
    if isinstance(ref, float) and isinstance(mine, float) and math.isnan(ref) and math.isnan(mine):
        return True
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
