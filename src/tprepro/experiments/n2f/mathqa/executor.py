"""Run a MathQA program on the numbers of its problem, in either semantics.

`faithful` follows the released solver loop (`solve.py`): a step whose operation
fails is dropped from the memory, so later `#i` index the *successful* results; an
argument `#i` / `n<i>` past the end of the memory / number list is silently left
out (the step then usually fails for want of arguments); the answer is the last
successful result; a program that never names an `n<i>` gives no answer; an
operation or constant the script cannot read stops the program (the script would
crash). `corrected` is strict: any failing step fails the program, and results must
be finite.

Nothing here can hang or blow up: every operation is bounded (see operations.py),
and all failures come back as `Execution.failure`, never as an exception.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from tprepro.experiments.n2f.tuples import parse_program
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.operations import MODES, OPERATIONS, OperationFailure, constant_value
from tprepro.experiments.n2f.mathqa.program import ARITY, Op, parse_linear_formula, tuples_to_ops

MAX_STEPS = 256  # longer programs are refused outright


@dataclass(frozen=True)
class Execution:
    """Outcome of one program: `value` (None on failure), per-step results, reason."""

    value: float | None
    results: tuple[float | None, ...] = ()  # one entry per step; None where it failed
    failure: str | None = None  # reason the program produced no value
    step_failures: tuple[str, ...] = field(default=())  # faithful: steps that failed but were skipped

    @property
    def ok(self) -> bool:
        return self.value is not None


def as_ops(program: str | Sequence) -> list[Op]:
    """Steps from a linear formula string, a tuple-program string, or tuples/steps."""
    if isinstance(program, str):
        if "(" in program:
            return parse_linear_formula(program)
        return tuples_to_ops(parse_program(program, arity=ARITY))
    program = list(program)
    if program and isinstance(program[0], tuple) and len(program[0]) == 2 and isinstance(program[0][1], tuple):
        return [(name, tuple(args)) for name, args in program]
    return tuples_to_ops(program)


def _resolve(arg: str, memory: Sequence[float], numbers: Sequence[float], mode: str) -> float | None:
    """Value of one argument; None when a reference points past the end."""
    if arg.startswith("#"):
        index = int(arg[1:])
        return memory[index] if index < len(memory) else None
    if arg.startswith("n") and arg[1:].isdigit():
        index = int(arg[1:])
        return numbers[index] if index < len(numbers) else None
    return constant_value(arg, mode)


def _run_faithful(ops: Sequence[Op], numbers: Sequence[float]) -> Execution:
    memory: list[float] = []
    results: list[float | None] = []
    skipped: list[str] = []
    uses_number = False
    for index, (name, args) in enumerate(ops):
        if name not in OPERATIONS or name in ("price_after_gain", "p_after_loss", "combination"):
            # not in the script's operation-name list: read as an argument -> crash
            return Execution(None, tuple(results), f"step {index}: {name!r} unknown to the released script")
        values = []
        for arg in args:
            uses_number = uses_number or (arg.startswith("n") and arg[1:].isdigit())
            try:
                value = _resolve(arg, memory, numbers, "faithful")
            except OperationFailure as exc:
                return Execution(None, tuple(results), f"step {index}: {exc}")
            if value is not None:
                values.append(value)
        try:
            if len(values) < OPERATIONS[name].arity:
                raise OperationFailure(f"{name}: missing argument (a reference past the end)")
            result = OPERATIONS[name].apply(values[: OPERATIONS[name].arity], "faithful")
        except OperationFailure as exc:
            results.append(None)
            skipped.append(f"step {index}: {exc}")
            continue
        memory.append(result)
        results.append(result)
    if not uses_number:
        return Execution(None, tuple(results), "program uses no number of the problem", tuple(skipped))
    if not memory:
        return Execution(None, tuple(results), "no step succeeded", tuple(skipped))
    return Execution(memory[-1], tuple(results), None, tuple(skipped))


def _run_corrected(ops: Sequence[Op], numbers: Sequence[float]) -> Execution:
    results: list[float] = []
    for index, (name, args) in enumerate(ops):
        try:
            if name not in OPERATIONS:
                raise OperationFailure(f"unknown operation {name!r}")
            values = []
            for arg in args:
                value = _resolve(arg, results, numbers, "corrected")
                if value is None:
                    raise OperationFailure(f"{arg} refers past the end")
                values.append(value)
            result = OPERATIONS[name].apply(values, "corrected")
        except OperationFailure as exc:
            return Execution(None, tuple(results) + (None,), f"step {index}: {exc}")
        results.append(result)
    if not results:
        return Execution(None, (), "empty program")
    return Execution(results[-1], tuple(results))


def execute(program: str | Sequence, numbers: Sequence[float], mode: str = "faithful") -> Execution:
    """Run `program` (linear formula, tuple-program string, tuples or steps) on `numbers`.

    Never raises for a bad program: malformed input, bad references, domain errors and
    overflow all come back as an Execution with `value=None` and a `failure` reason.
    """
    if mode not in MODES:
        raise TpreproError(f"unknown execution mode {mode!r}; expected one of {MODES}")
    try:
        ops = as_ops(program)
    except TpreproError as exc:
        return Execution(None, (), f"malformed program: {exc}")
    if len(ops) > MAX_STEPS:
        return Execution(None, (), f"program has {len(ops)} steps (limit {MAX_STEPS})")
    numbers = [float(x) for x in numbers]
    run = _run_faithful if mode == "faithful" else _run_corrected
    outcome = run(ops, numbers)
    if outcome.value is not None and mode == "corrected" and not math.isfinite(outcome.value):
        return Execution(None, outcome.results, "non-finite result")
    return outcome
