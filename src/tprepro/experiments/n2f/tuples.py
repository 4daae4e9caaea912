"""Relational-tuple programs: the target format of the N2F tasks (MathQA, AlgoLisp).

A program is a list of tuples `(relation, arg_1, ..., arg_K)` of a fixed arity K per
dataset (MathQA 2, AlgoLisp 3, TP-N2F Appendix A.1); a relation with fewer arguments
is padded with `NO_ARG`. `#i` names the result of the i-th tuple (0-based).

In parquet and in the training stream a program travels as one string,
`format_program` / `parse_program`: tuples separated by " | ", tokens by spaces
(no token contains a space or a "|": the loaders check that).
"""

from __future__ import annotations

from collections.abc import Sequence

from tprepro.errors import TpreproError
from tprepro.data.tuple_ids import ARG_NONE, ARG_PAD, REL_BOS, REL_EOS, REL_PAD  # noqa: F401  (the models' reserved ids)

NO_ARG = "<none>"  # filler of an argument slot the relation does not use
TUPLE_SEPARATOR = " | "


Program = list[tuple[str, ...]]


def pad_tuple(relation: str, args: Sequence[str], arity: int) -> tuple[str, ...]:
    """(relation, *args) padded with NO_ARG to `arity` arguments."""
    if len(args) > arity:
        raise TpreproError(f"relation {relation!r} has {len(args)} arguments; the arity is {arity}")
    return (relation, *args, *([NO_ARG] * (arity - len(args))))


def strip_tuple(item: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """(relation, arguments without the trailing NO_ARG padding)."""
    args = list(item[1:])
    while args and args[-1] == NO_ARG:
        args.pop()
    return item[0], tuple(args)


def format_program(program: Sequence[Sequence[str]]) -> str:
    """'add n0 n1 | divide #0 const_100' for [('add', 'n0', 'n1'), ('divide', '#0', 'const_100')]."""
    for item in program:
        for token in item:
            if not token or " " in token or "|" in token:
                raise TpreproError(f"program token {token!r} is empty or holds a space or '|'")
    return TUPLE_SEPARATOR.join(" ".join(item) for item in program)


def parse_program(text: str, arity: int | None = None) -> Program:
    """Inverse of format_program; with `arity`, every tuple must have exactly that many arguments."""
    if not text.strip():
        return []
    program = [tuple(part.split()) for part in text.split(TUPLE_SEPARATOR)]
    if arity is not None:
        for i, item in enumerate(program):
            if len(item) != arity + 1:
                raise TpreproError(f"tuple {i} {item!r}: expected a relation and {arity} arguments")
    return program
