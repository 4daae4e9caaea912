"""MathQA `linear_formula` <-> arity-2 relational tuples (TP-N2F Appendix A.1).

A linear formula is "op(arg,arg)|op(arg)|..." (a trailing "|" is allowed; it is
dropped on the way back, the only normalisation). Arguments are `n<i>` (the i-th
number of the problem text), `#<i>` (the result of the i-th operation, 0-based) or a
`const_*` name.

Tuples have arity 2. One-argument operations are padded with NO_ARG. The paper
rewrites three-argument operations "based on hand-encoded rules" it does not
publish; the rule here, reversible by construction:

    f(a, b, c)   ->   (f, a, b)  (third_arg, c, <none>)

The head tuple (f, a, b) carries the operation and its first two arguments, the
following `third_arg` tuple the last argument; the pair computes one result, named
by the index of the `third_arg` tuple. References are renumbered: operation j is
referred to as `#t` with t = j + (number of ternary operations among 0..j), and a
reference to a head tuple is malformed. The inverse maps every reference back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tprepro.experiments.n2f.tuples import NO_ARG, Program, format_program, pad_tuple, parse_program, strip_tuple
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.operations import OPERATIONS

ARITY = 2
THIRD_ARG = "third_arg"  # relation of the tuple carrying a ternary operation's last argument

Op = tuple[str, tuple[str, ...]]  # (operation, arguments) of one linear-formula step

_STEP = re.compile(r"([a-z_]+)\(([^()]*)\)")
_ARG = re.compile(r"n\d+|#\d+|const_[a-z0-9_.]+")


def _check_ops(ops: Sequence[Op], where: str) -> None:
    for index, (name, args) in enumerate(ops):
        if name not in OPERATIONS:
            raise TpreproError(f"{where}: step {index}: unknown operation {name!r}")
        if len(args) != OPERATIONS[name].arity:
            raise TpreproError(
                f"{where}: step {index}: {name} takes {OPERATIONS[name].arity} arguments, got {len(args)}"
            )
        for arg in args:
            if not _ARG.fullmatch(arg):
                raise TpreproError(f"{where}: step {index}: bad argument {arg!r}")
            if arg.startswith("#") and int(arg[1:]) >= index:
                raise TpreproError(f"{where}: step {index}: {arg} refers to a step not computed yet")


def parse_linear_formula(text: str) -> list[Op]:
    """Steps of a linear formula; TpreproError naming the formula if it is malformed."""
    where = f"linear formula {text!r}"
    if not isinstance(text, str):
        raise TpreproError(f"{where}: not a string")
    body = text[:-1] if text.endswith("|") else text
    if not body:
        raise TpreproError(f"{where}: empty")
    ops: list[Op] = []
    for index, part in enumerate(body.split("|")):
        match = _STEP.fullmatch(part)
        if match is None:
            raise TpreproError(f"{where}: step {index} {part!r} is not op(arg,...)")
        args = tuple(match.group(2).split(",")) if match.group(2) else ()
        ops.append((match.group(1), args))
    _check_ops(ops, where)
    return ops


def format_linear_formula(ops: Sequence[Op], trailing_bar: bool = False) -> str:
    """Inverse of parse_linear_formula ("|"-joined, no trailing "|" unless asked)."""
    text = "|".join(f"{name}({','.join(args)})" for name, args in ops)
    return text + "|" if trailing_bar else text


def ops_to_tuples(ops: Sequence[Op]) -> Program:
    """Arity-2 tuples of a parsed formula (ternary steps split, references renumbered)."""
    _check_ops(ops, "program")
    position: list[int] = []  # operation index -> index of the tuple naming its result
    program: Program = []

    def renumber(arg: str) -> str:
        return f"#{position[int(arg[1:])]}" if arg.startswith("#") else arg

    for name, args in ops:
        args = tuple(renumber(arg) for arg in args)
        if len(args) == 3:
            program.append((name, args[0], args[1]))
            program.append((THIRD_ARG, args[2], NO_ARG))
        else:
            program.append(pad_tuple(name, args, ARITY))
        position.append(len(program) - 1)
    return program


def tuples_to_ops(program: Sequence[Sequence[str]]) -> list[Op]:
    """Inverse of ops_to_tuples; TpreproError if the tuples do not form a program."""
    where = f"tuple program {format_program(program) if program else ''!r}"
    operation_of: dict[int, int] = {}  # tuple index -> operation index (result tuples only)
    ops: list[Op] = []
    pending: tuple[str, tuple[str, ...]] | None = None  # a ternary head awaiting third_arg

    def renumber(arg: str, index: int) -> str:
        if not arg.startswith("#"):
            return arg
        target = int(arg[1:]) if arg[1:].isdigit() else -1
        if target not in operation_of:
            raise TpreproError(f"{where}: tuple {index}: {arg} names no earlier result")
        return f"#{operation_of[target]}"

    for index, item in enumerate(program):
        if len(item) != ARITY + 1:
            raise TpreproError(f"{where}: tuple {index} {tuple(item)!r} does not have {ARITY} arguments")
        relation, args = strip_tuple(item)
        if NO_ARG in args:
            raise TpreproError(f"{where}: tuple {index}: {NO_ARG} before a real argument")
        args = tuple(renumber(arg, index) for arg in args)
        if pending is not None:
            if relation != THIRD_ARG or len(args) != 1:
                raise TpreproError(f"{where}: tuple {index}: {pending[0]} needs a ({THIRD_ARG}, arg) tuple next")
            ops.append((pending[0], pending[1] + args))
            pending = None
        elif relation == THIRD_ARG:
            raise TpreproError(f"{where}: tuple {index}: {THIRD_ARG} without a three-argument operation")
        elif relation not in OPERATIONS:
            raise TpreproError(f"{where}: tuple {index}: unknown relation {relation!r}")
        elif OPERATIONS[relation].arity == 3:
            if len(args) != 2:
                raise TpreproError(f"{where}: tuple {index}: {relation} head needs 2 arguments")
            pending = (relation, args)
            continue
        else:
            ops.append((relation, args))
        operation_of[index] = len(ops) - 1
    if pending is not None:
        raise TpreproError(f"{where}: ends inside {pending[0]} (no {THIRD_ARG} tuple)")
    _check_ops(ops, where)
    return ops


def formula_to_program(text: str) -> str:
    """Linear formula -> tuple program string (format_program)."""
    return format_program(ops_to_tuples(parse_linear_formula(text)))


def program_to_formula(text: str) -> str:
    """Tuple program string -> linear formula (no trailing "|")."""
    return format_linear_formula(tuples_to_ops(parse_program(text, arity=ARITY)))
