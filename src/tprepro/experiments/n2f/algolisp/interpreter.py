"""A bounded interpreter of the AlgoLisp DSL (program trees as nested lists of strings).

A program is first *compiled*: its structure is checked (known symbols, arities, `arg1`/`arg2`/
`self` only inside a lambda, size and depth bounds) and its types are inferred by unification
(int, bool, string, arrays, dicts, functions; lambda parameters are ints, as the DSL declares).
It then runs on inputs within `Limits` (total steps, lambda call depth, evaluation depth,
wall time, integer and sequence sizes). Every failure, static or at run time, is one
`ExecutionError`; nothing is ever passed to `eval`.

Semantics follow the DSL's reference executor (facts, not code, taken from it):
`/` on an int numerator is floor division, `floor` truncates toward zero, `range` refuses more than
1000 elements and yields a range value (equal to another range with the same elements, never to a
list; `append` to it fails), `if` is lazy while `&&`/`||` evaluate both sides, `partialK v f`
inserts `v` as the K-th argument of `f`, `combine f g` is `x -> f(g(x))`, `dict-insert` updates the
dict in place, and the Lisp-defined helpers (square, is_prime, min, max, str_min, str_max, contains,
is_sorted, abs, digits) compute what their Lisp definitions compute (e.g. `is_prime` fails above
1,002,001 because its internal range would exceed 1000 elements; `digits` of a float keeps the
fractional parts). A lambda may nest at most 110 calls deep (the reference's stack bound).
"""

from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from tprepro.errors import TpreproError


class ExecutionError(TpreproError):
    """The program is malformed, ill-typed, failed at run time or exceeded a limit."""


@dataclass(frozen=True)
class Limits:
    """Resource bounds of one run (the defaults suit 10-test AlgoLisp problems)."""

    max_steps: int = 200_000  # builtin applications + function calls + loop iterations
    max_call_depth: int = 110  # nested lambda calls (the reference executor's bound)
    max_eval_depth: int = 2_000  # nested evaluations (bounds the Python stack)
    timeout_s: float = 1.0  # wall time of one run
    max_int_bits: int = 10_000  # magnitude of any integer result
    max_length: int = 100_000  # length of any array or string result
    max_tree_nodes: int = 5_000
    max_tree_depth: int = 200


# ----------------------------------------------------------------------------------------------
# Types: ("int",), ("bool",), ("str",), ("arr", t), ("dict", k, v), ("fn", ret, *params),
# ("type", t) for the type symbol `int`, and TVar for a not-yet-known type.

INT, BOOL, STR = ("int",), ("bool",), ("str",)


class TVar:
    __slots__ = ("ref",)

    def __init__(self) -> None:
        self.ref = None


class _Clash(Exception):
    pass


def _resolve(t):
    while isinstance(t, TVar) and t.ref is not None:
        t = t.ref
    return t


def _occurs(var: TVar, t) -> bool:
    t = _resolve(t)
    if t is var:
        return True
    return isinstance(t, tuple) and any(_occurs(var, part) for part in t[1:])


def _unify(a, b) -> None:
    a, b = _resolve(a), _resolve(b)
    if a is b:
        return
    if isinstance(a, TVar) or isinstance(b, TVar):
        var, other = (a, b) if isinstance(a, TVar) else (b, a)
        if _occurs(var, other):
            raise _Clash("recursive type")
        var.ref = other
        return
    if a[0] != b[0] or len(a) != len(b):
        raise _Clash(f"{show_type(a)} vs {show_type(b)}")
    for x, y in zip(a[1:], b[1:]):
        _unify(x, y)


def show_type(t) -> str:
    t = _resolve(t)
    if isinstance(t, TVar):
        return "?"
    if t[0] == "arr":
        return show_type(t[1]) + "[]"
    if t[0] == "dict":
        return f"dict<{show_type(t[1])},{show_type(t[2])}>"
    if t[0] == "fn":
        return "(" + ",".join(show_type(p) for p in t[2:]) + ")->" + show_type(t[1])
    if t[0] == "type":
        return "type<" + show_type(t[1]) + ">"
    return t[0]


ARG_TYPE_NAMES = {
    "int": INT,
    "string": STR,
    "bool": BOOL,
    "int[]": ("arr", INT),
    "string[]": ("arr", STR),
    "int[][]": ("arr", ("arr", INT)),
    "dict<int,int>": ("dict", INT, INT),
    "dict<string,int>": ("dict", STR, INT),
}


def parse_arg_type(name: str):
    """The type of an argument declared as e.g. 'int[]' ('any' -> unknown)."""
    if name == "any":
        return TVar()
    if name not in ARG_TYPE_NAMES:
        raise ExecutionError(f"unknown argument type {name!r}")
    return ARG_TYPE_NAMES[name]


def type_of_value(value):
    """The type of a concrete input value (arrays take their first element's type)."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return INT
    if isinstance(value, str):
        return STR
    if isinstance(value, (list, range)):
        return ("arr", type_of_value(value[0]) if len(value) else TVar())
    if isinstance(value, dict):
        return ("dict", TVar(), TVar())
    return TVar()


def _signatures() -> dict[str, Callable[[], tuple]]:
    """Fresh-instance signature ("fn", ret, *params) of every plain builtin."""

    def v():
        return TVar()

    def num2():
        return ("fn", INT, INT, INT)

    sigs: dict[str, Callable[[], tuple]] = {}
    for name in ("+", "-", "*", "/", "%", "pow", "min", "max"):
        sigs[name] = num2
    for name in ("sqrt", "floor", "square", "abs"):
        sigs[name] = lambda: ("fn", INT, INT)
    for name in ("||", "&&"):
        sigs[name] = lambda: ("fn", BOOL, BOOL, BOOL)
    for name in ("<", ">", "<=", ">=", "==", "!="):
        sigs[name] = lambda: ("fn", BOOL, v(), v())
    for name in ("str_min", "str_max", "str_concat"):
        sigs[name] = lambda: ("fn", STR, STR, STR)
    for name in ("sort", "reverse", "tail"):
        sigs[name] = lambda a=None: (lambda t: ("fn", ("arr", t), ("arr", t)))(v())
    sigs["!"] = lambda: ("fn", BOOL, BOOL)

    def reduce_sig():
        a, b = v(), v()
        return ("fn", b, ("arr", a), b, ("fn", b, b, a))

    def map_sig():
        a, b = v(), v()
        return ("fn", ("arr", b), ("arr", a), ("fn", b, a))

    def filter_sig():
        a = v()
        return ("fn", ("arr", a), ("arr", a), ("fn", BOOL, a))

    def invoke1_sig():
        b = v()
        return ("fn", b, ("fn", b, INT), INT)

    def elem(make):
        def sig():
            return make(v())

        return sig

    def dict_sig(make):
        def sig():
            return make(v(), v())

        return sig

    sigs.update(
        {
            "reduce": reduce_sig,
            "map": map_sig,
            "filter": filter_sig,
            "invoke1": invoke1_sig,
            "range": lambda: ("fn", ("arr", INT), INT, INT),
            "array-new": elem(lambda a: ("fn", ("arr", a), ("type", a))),
            "len": elem(lambda a: ("fn", INT, ("arr", a))),
            "head": elem(lambda a: ("fn", a, ("arr", a))),
            "deref": elem(lambda a: ("fn", a, ("arr", a), INT)),
            "int-deref": lambda: ("fn", INT, ("arr", INT), INT),
            "slice": elem(lambda a: ("fn", ("arr", a), ("arr", a), INT, INT)),
            "append": elem(lambda a: ("fn", ("arr", a), ("arr", a), a)),
            "strlen": lambda: ("fn", INT, STR),
            "str_index": lambda: ("fn", STR, INT, STR),
            "str_split": lambda: ("fn", ("arr", STR), STR, STR),
            "dict-new": dict_sig(lambda k, w: ("fn", ("dict", k, w), ("type", k), ("type", w))),
            "dict-insert": dict_sig(lambda k, w: ("fn", ("dict", k, w), ("dict", k, w), k, w)),
            "dict-keys": dict_sig(lambda k, w: ("fn", ("arr", k), ("dict", k, w))),
            "is_prime": lambda: ("fn", BOOL, INT),
            "contains": lambda: ("fn", BOOL, ("arr", INT), INT),
            "is_sorted_helper": lambda: ("fn", BOOL, INT, ("arr", INT)),
            "is_sorted": lambda: ("fn", BOOL, ("arr", INT)),
            "digits": lambda: ("fn", ("arr", INT), INT),
        }
    )
    return sigs


SIGNATURES = _signatures()
COMPARISONS = frozenset({"<", ">", "<=", ">="})
PARTIALS = {"partial0": 0, "partial1": 1, "partial2": 2}
SPECIAL_FORMS = {"if": 3, "lambda1": 1, "lambda2": 1}
LAMBDA_VARS = ("arg1", "arg2", "self")


# ----------------------------------------------------------------------------------------------
# Run-time values


class TypeValue:
    """The value of the type symbol `int` (argument of array-new / dict-new)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<type {self.name}>"


INT_TYPE = TypeValue("int")


class Func:
    """A function value."""

    __slots__ = ()


class Builtin(Func):
    __slots__ = ("name", "arity", "impl")

    def __init__(self, name: str, arity: int, impl) -> None:
        self.name, self.arity, self.impl = name, arity, impl

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


class Closure(Func):
    __slots__ = ("params", "body", "env")

    def __init__(self, params: int, body, env: dict) -> None:
        self.params, self.body, self.env = params, body, env

    def __repr__(self) -> str:
        return f"<lambda{self.params}>"


class Partial(Func):
    __slots__ = ("index", "value", "func")

    def __init__(self, index: int, value, func) -> None:
        self.index, self.value, self.func = index, value, func


class Combined(Func):
    __slots__ = ("outer", "inner")

    def __init__(self, outer, inner) -> None:
        self.outer, self.inner = outer, inner


CONSTANTS = {
    "0": (0, INT),
    "1": (1, INT),
    "2": (2, INT),
    "10": (10, INT),
    "40": (40, INT),
    "1000000000": (1000000000, INT),
    "inf": (float("inf"), INT),
    '""': ("", STR),
    '" "': (" ", STR),
    '"z"': ("z", STR),
    "true": (True, BOOL),
    "false": (False, BOOL),
    "int": (INT_TYPE, ("type", INT)),
}


# ----------------------------------------------------------------------------------------------
# The machine: counters and limits of one run


class Machine:
    __slots__ = ("limits", "inputs", "steps", "call_depth", "eval_depth", "deadline")

    def __init__(self, limits: Limits, inputs: dict) -> None:
        self.limits = limits
        self.inputs = inputs
        self.steps = 0
        self.call_depth = 0
        self.eval_depth = 0
        self.deadline = time.monotonic() + limits.timeout_s

    def enter(self) -> None:
        """One more nested evaluation (the caller decrements `eval_depth` when it returns)."""
        self.eval_depth += 1
        if self.eval_depth > self.limits.max_eval_depth:
            raise ExecutionError(f"evaluation depth limit {self.limits.max_eval_depth} exceeded")

    def step(self, count: int = 1) -> None:
        before = self.steps
        self.steps += count
        if self.steps > self.limits.max_steps:
            raise ExecutionError(f"step limit {self.limits.max_steps} exceeded")
        if (before >> 10) != (self.steps >> 10) and time.monotonic() > self.deadline:
            raise ExecutionError(f"time limit {self.limits.timeout_s}s exceeded")

    def number(self, x):
        """Check a numeric result against the size bound."""
        if type(x) is int and x.bit_length() > self.limits.max_int_bits:
            raise ExecutionError(f"integer larger than {self.limits.max_int_bits} bits")
        if isinstance(x, complex):
            raise ExecutionError("complex result")
        return x

    def sized(self, seq):
        if len(seq) > self.limits.max_length:
            raise ExecutionError(f"sequence longer than {self.limits.max_length}")
        return seq

    def apply(self, func, args: list):
        self.step()
        if isinstance(func, Builtin):
            if len(args) != func.arity:
                raise ExecutionError(f"{func.name} takes {func.arity} arguments, got {len(args)}")
            return func.impl(self, *args)
        if isinstance(func, Closure):
            if len(args) != func.params:
                raise ExecutionError(f"lambda{func.params} called with {len(args)} arguments")
            self.call_depth += 1
            if self.call_depth > self.limits.max_call_depth:
                raise ExecutionError(f"call depth limit {self.limits.max_call_depth} exceeded")
            env = dict(func.env)
            env["arg1"] = args[0]
            if func.params == 2:
                env["arg2"] = args[1]
            env["self"] = func
            result = func.body.ev(env, self)
            self.call_depth -= 1
            return result
        if isinstance(func, Partial):
            return self.apply(func.func, args[: func.index] + [func.value] + args[func.index :])
        if isinstance(func, Combined):
            return self.apply(func.outer, [self.apply(func.inner, args)])
        raise ExecutionError(f"{func!r} is not a function")


# ----------------------------------------------------------------------------------------------
# Builtin implementations: impl(machine, *values)


def _num(x):
    if type(x) not in (int, float, bool):
        raise ExecutionError(f"expected a number, got {type(x).__name__}")
    return x


def _bool(x):
    if isinstance(x, (Func, TypeValue)):
        raise ExecutionError("expected a boolean, got a function")
    return x


def _str(x):
    if type(x) is not str:
        raise ExecutionError(f"expected a string, got {type(x).__name__}")
    return x


def _seq(x):
    if type(x) not in (list, range):
        raise ExecutionError(f"expected an array, got {type(x).__name__}")
    return x


def _index(x):
    if not isinstance(x, int):
        raise ExecutionError(f"expected an integer index, got {type(x).__name__}")
    return x


def _dict(x):
    if type(x) is not dict:
        raise ExecutionError(f"expected a dict, got {type(x).__name__}")
    return x


def _div(m, x, y):
    _num(x), _num(y)
    if y == 0:
        raise ExecutionError("division by zero")
    return m.number(x // y if isinstance(x, int) else x / y)


def _mod(m, x, y):
    _num(x), _num(y)
    if y == 0:
        raise ExecutionError("modulo by zero")
    return m.number(x % y)


def _pow(m, x, y):
    _num(x), _num(y)
    if isinstance(x, int) and isinstance(y, int) and y > 0 and abs(x) > 1:
        if (abs(x).bit_length() - 1) * y > m.limits.max_int_bits:
            raise ExecutionError(f"integer larger than {m.limits.max_int_bits} bits")
    return m.number(x**y)


def _range(m, lo, hi):
    _num(lo), _num(hi)
    if hi - lo > 1000:
        raise ExecutionError("range of more than 1000 elements")
    return range(int(lo), int(hi))


def _reduce(m, seq, init, func):
    acc = init
    for item in _seq(seq):
        acc = m.apply(func, [acc, item])
    return acc


def _map(m, seq, func):
    return [m.apply(func, [item]) for item in _seq(seq)]


def _filter(m, seq, func):
    return [item for item in _seq(seq) if _bool(m.apply(func, [item]))]


def _head(m, seq):
    if not len(_seq(seq)):
        raise ExecutionError("head of an empty array")
    return seq[0]


def _deref(m, seq, idx):
    _seq(seq), _index(idx)
    if idx < 0 or idx >= len(seq):
        raise ExecutionError(f"index {idx} out of bounds (length {len(seq)})")
    return seq[idx]


def _slice(m, seq, lo, hi):
    _seq(seq)
    lo = max(0, lo)
    return seq[_index(lo) : _index(hi)]


def _append(m, seq, value):
    if type(seq) is not list:
        raise ExecutionError(f"cannot append to a {type(seq).__name__}")
    return m.sized(seq + [value])


def _sort(m, seq):
    m.step(len(_seq(seq)))
    return sorted(seq)


def _compare(op):
    def impl(m, x, y):
        if isinstance(x, (Func, TypeValue)) or isinstance(y, (Func, TypeValue)):
            raise ExecutionError("cannot order functions")
        return op(x, y)

    return impl


def _str_index(m, idx, s):
    _num(idx), _str(s)
    position = int(idx)
    if not -len(s) <= position < len(s):
        raise ExecutionError(f"string index {position} out of range (length {len(s)})")
    return s[position]


def _str_split(m, s, sep):
    if _str(sep) == "":
        raise ExecutionError("empty separator")
    return [part for part in _str(s).split(sep) if part]


def _dict_insert(m, d, key, value):
    _dict(d)[key] = value
    return m.sized(d)


def _is_prime(m, x):
    _num(x)
    if x <= 1:
        return False
    hi = 1 + math.sqrt(x)
    if hi - 2 > 1000:
        raise ExecutionError("range of more than 1000 elements (is_prime)")
    found = False
    for divisor in range(2, int(hi)):
        m.step()
        found = found or (x % divisor == 0)
    return not found


def _contains(m, seq, x):
    found = False
    for item in _seq(seq):
        m.step()
        found = found or (x == item)
    return found


def _is_sorted(m, seq):
    _seq(seq)
    result = True
    for left, right in zip(seq, seq[1:]):
        m.step()
        result = _compare(lambda a, b: a <= b)(m, left, right) and result
    return result


def _is_sorted_helper(m, x, seq):
    return _is_sorted(m, [x, *_seq(seq)])


def _abs(m, a):
    return a if _num(a) > 0 else m.number(0 - a)


def _digits(m, a):
    n = _abs(m, a)
    out = []
    while not n < 10:
        m.step()
        out.append(_mod(m, n, 10))
        n = _div(m, n, 10)
    out.append(n)
    out.reverse()
    return out


def _builtins() -> dict[str, Builtin]:
    table: dict[str, tuple[int, Any]] = {
        "+": (2, lambda m, x, y: m.number(_num(x) + _num(y))),
        "-": (2, lambda m, x, y: m.number(_num(x) - _num(y))),
        "*": (2, lambda m, x, y: m.number(_num(x) * _num(y))),
        "/": (2, _div),
        "%": (2, _mod),
        "pow": (2, _pow),
        "sqrt": (1, lambda m, x: math.sqrt(_num(x))),
        "floor": (1, lambda m, x: int(float(_num(x)))),
        "!": (1, lambda m, x: not x),
        "||": (2, lambda m, x, y: _bool(x) or _bool(y)),
        "&&": (2, lambda m, x, y: _bool(x) and _bool(y)),
        "<": (2, _compare(lambda x, y: x < y)),
        ">": (2, _compare(lambda x, y: x > y)),
        "<=": (2, _compare(lambda x, y: x <= y)),
        ">=": (2, _compare(lambda x, y: x >= y)),
        "==": (2, lambda m, x, y: x == y),
        "!=": (2, lambda m, x, y: x != y),
        "reduce": (3, _reduce),
        "map": (2, _map),
        "filter": (2, _filter),
        "range": (2, _range),
        "invoke1": (2, lambda m, f, x: m.apply(f, [x])),
        "combine": (2, lambda m, f, g: Combined(f, g)),
        "partial0": (2, lambda m, value, f: Partial(0, value, f)),
        "partial1": (2, lambda m, value, f: Partial(1, value, f)),
        "partial2": (2, lambda m, value, f: Partial(2, value, f)),
        "array-new": (1, lambda m, t: []),
        "len": (1, lambda m, a: len(_seq(a))),
        "head": (1, _head),
        "tail": (1, lambda m, a: _seq(a)[1:]),
        "deref": (2, _deref),
        "int-deref": (2, _deref),
        "slice": (3, _slice),
        "append": (2, _append),
        "sort": (1, _sort),
        "reverse": (1, lambda m, a: list(reversed(_seq(a)))),
        "strlen": (1, lambda m, s: len(_str(s))),
        "str_index": (2, _str_index),
        "str_concat": (2, lambda m, a, b: m.sized(_str(a) + _str(b))),
        "str_split": (2, _str_split),
        "dict-new": (2, lambda m, k, v: {}),
        "dict-insert": (3, _dict_insert),
        "dict-keys": (1, lambda m, d: sorted(_dict(d).keys())),
        "square": (1, lambda m, x: m.number(_num(x) * x)),
        "is_prime": (1, _is_prime),
        "min": (2, lambda m, x, y: x if _compare(lambda a, b: a <= b)(m, x, y) else y),
        "max": (2, lambda m, x, y: y if _compare(lambda a, b: a <= b)(m, x, y) else x),
        "str_min": (2, lambda m, x, y: x if _compare(lambda a, b: a <= b)(m, x, y) else y),
        "str_max": (2, lambda m, x, y: y if _compare(lambda a, b: a <= b)(m, x, y) else x),
        "contains": (2, _contains),
        "is_sorted_helper": (2, _is_sorted_helper),
        "is_sorted": (1, _is_sorted),
        "abs": (1, _abs),
        "digits": (1, _digits),
    }
    return {name: Builtin(name, arity, impl) for name, (arity, impl) in table.items()}


BUILTINS = _builtins()
FUNCTION_SYMBOLS = frozenset(BUILTINS) | frozenset(SPECIAL_FORMS)
ALL_SYMBOLS = FUNCTION_SYMBOLS | frozenset(CONSTANTS)


# ----------------------------------------------------------------------------------------------
# Compiled program nodes: ev(env, machine) -> value


class Const:
    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def ev(self, env, m):
        return self.value


class Input:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def ev(self, env, m):
        try:
            return m.inputs[self.name]
        except KeyError:
            raise ExecutionError(f"no value for input {self.name!r}") from None


class Local:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def ev(self, env, m):
        return env[self.name]


class Call:
    __slots__ = ("func", "args")

    def __init__(self, func: Builtin, args: list) -> None:
        self.func, self.args = func, args

    def ev(self, env, m):
        m.enter()
        values = [arg.ev(env, m) for arg in self.args]
        m.step()
        result = self.func.impl(m, *values)
        m.eval_depth -= 1
        return result


class SelfCall:
    __slots__ = ("args",)

    def __init__(self, args: list) -> None:
        self.args = args

    def ev(self, env, m):
        m.enter()
        values = [arg.ev(env, m) for arg in self.args]
        result = m.apply(env["self"], values)
        m.eval_depth -= 1
        return result


class NotCallable:
    """A call whose head names a value (an input or arg1/arg2): fails when evaluated."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def ev(self, env, m):
        raise ExecutionError(f"{self.name!r} is not a function")


class If:
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond, then, other) -> None:
        self.cond, self.then, self.other = cond, then, other

    def ev(self, env, m):
        m.enter()
        m.step()
        branch = self.then if _bool(self.cond.ev(env, m)) else self.other
        result = branch.ev(env, m)
        m.eval_depth -= 1
        return result


class Fail:
    """An expression that fails when evaluated."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def ev(self, env, m):
        raise ExecutionError(self.message)


class Lambda:
    __slots__ = ("params", "body")

    def __init__(self, params: int, body) -> None:
        self.params, self.body = params, body

    def ev(self, env, m):
        return Closure(self.params, self.body, env or {})


# ----------------------------------------------------------------------------------------------
# Compilation: structure checks + type inference


class _Scope:
    """Lambda variables visible at a point: arg1/arg2/self with their types."""

    def __init__(self, parent: "_Scope | None", params: int, self_type) -> None:
        self.vars = dict(parent.vars) if parent else {}
        self.vars["arg1"] = INT
        if params == 2:
            self.vars["arg2"] = INT
        self.vars["self"] = self_type


class _Compiler:
    def __init__(self, arg_types: dict, limits: Limits) -> None:
        self.arg_types = arg_types
        self.limits = limits
        self.nodes = 0
        self.untyped = 0  # > 0 inside the arguments of a `self` call (types not checked there)

    def fail(self, message: str, tree) -> ExecutionError:
        return ExecutionError(f"{message} in {_short(tree)}")

    def build(self, tree, scope: _Scope | None, depth: int):
        """(node, type) of `tree`."""
        self.nodes += 1
        if self.nodes > self.limits.max_tree_nodes:
            raise ExecutionError(f"program has more than {self.limits.max_tree_nodes} nodes")
        if depth > self.limits.max_tree_depth:
            raise ExecutionError(f"program nested deeper than {self.limits.max_tree_depth}")
        if isinstance(tree, str):
            return self.leaf(tree, scope)
        if not isinstance(tree, list) or not tree:
            raise self.fail("expected a symbol or a non-empty list", tree)
        head, args = tree[0], tree[1:]
        if not isinstance(head, str):
            raise self.fail("the head of a call must be a symbol", tree)
        if head in SPECIAL_FORMS:
            if len(args) != SPECIAL_FORMS[head]:
                raise self.fail(f"{head} takes {SPECIAL_FORMS[head]} arguments, got {len(args)}", tree)
            return self.special(head, args, scope, depth, tree)
        if head in BUILTINS:
            builtin = BUILTINS[head]
            if len(args) != builtin.arity:
                raise self.fail(f"{head} takes {builtin.arity} arguments, got {len(args)}", tree)
            built = [self.build(arg, scope, depth + 1) for arg in args]
            return Call(builtin, [node for node, _ in built]), self.call_type(head, [t for _, t in built], tree)
        if head in CONSTANTS:
            raise self.fail(f"constant {head} is not a function", tree)
        if head == "self" and scope is not None:
            # Like the reference, the arguments of a recursive call are not type-checked
            # (only their symbols and arities); run-time checks still apply.
            self.untyped += 1
            built = [self.build(arg, scope, depth + 1) for arg in args]
            self.untyped -= 1
            return SelfCall([node for node, _ in built]), _resolve(scope.vars["self"])[1]
        built = [self.build(arg, scope, depth + 1) for arg in args]
        if head in self.arg_types or (scope is not None and head in scope.vars):
            return NotCallable(head), TVar()
        raise self.fail(f"unknown function {head!r}", tree)

    def leaf(self, symbol: str, scope: _Scope | None):
        if symbol in CONSTANTS:
            value, t = CONSTANTS[symbol]
            return Const(value), t
        if symbol in BUILTINS:
            if symbol in SIGNATURES:
                return Const(BUILTINS[symbol]), SIGNATURES[symbol]()
            return Const(BUILTINS[symbol]), TVar()  # combine / partialK as values
        if symbol in SPECIAL_FORMS:
            raise ExecutionError(f"special form {symbol} used as a value")
        if scope is not None and symbol in scope.vars:
            return Local(symbol), scope.vars[symbol]
        if symbol in self.arg_types:
            return Input(symbol), self.arg_types[symbol]
        raise ExecutionError(f"unknown symbol {symbol!r}")

    def special(self, head: str, args: list, scope, depth: int, tree):
        if head == "if":
            (cond, ct), (then, tt), (other, ot) = (self.build(arg, scope, depth + 1) for arg in args)
            if not self.untyped and any(isinstance(a, list) and a[:1] == ["self"] for a in args[1:]):
                # The reference's checker types a call of self as the function itself, so a
                # branch that is directly such a call never matches the other branch.
                raise self.fail("an if branch cannot be directly a call of self", tree)
            try:
                _unify(ct, BOOL)
                _unify(tt, ot)
            except _Clash as exc:
                if not self.untyped:
                    raise self.fail(f"if: condition not boolean or branches of different types ({exc})", tree) from None
                return If(cond, then, other), TVar()
            return If(cond, then, other), tt
        params = 1 if head == "lambda1" else 2
        body_tree = args[0]
        result = TVar()
        if isinstance(body_tree, list) and body_tree and body_tree[0] == "self":
            # Such a lambda can only recurse forever; the reference's checker gives it a
            # function return type, which clashes wherever a value is expected.
            raise self.fail("a lambda body cannot be just a call of self", tree)
        bare_failure = isinstance(body_tree, str) and not (
            body_tree in CONSTANTS or body_tree in self.arg_types or (scope is not None and body_tree in scope.vars)
        )
        self_type = ("fn", result, *([INT] * params))
        body, bt = self.build(body_tree, _Scope(scope, params, self_type), depth + 1)
        try:
            _unify(bt, result)
        except _Clash as exc:
            if not self.untyped:
                raise self.fail(f"recursive lambda type ({exc})", tree) from None
        body_type = _resolve(bt)
        if isinstance(body_type, tuple) and body_type[0] == "type" and not self.untyped:
            raise self.fail("a lambda cannot return the type symbol", tree)
        if bare_failure:
            # The reference accepts a bare symbol as a lambda body only if it is a constant, an
            # input, or a lambda variable already visible outside this lambda; otherwise the
            # lambda fails when it is created.
            return Fail(f"a lambda body cannot be the bare symbol {body_tree!r}"), self_type
        return Lambda(params, body), self_type

    def call_type(self, head: str, arg_types: list, tree):
        try:
            if head in PARTIALS:
                return self.partial_type(PARTIALS[head], *arg_types)
            if head == "combine":
                return self.combine_type(*arg_types)
            sig = SIGNATURES[head]()
            for param, arg, arg_tree in zip(sig[2:], map(_resolve, arg_types), tree[1:]):
                # A function (or the type symbol) goes only where one is expected; like the
                # reference, == and != also take `self` and lambdas (plain function types).
                if isinstance(param, TVar) and isinstance(arg, tuple) and arg[0] in ("fn", "type"):
                    if not (head in ("==", "!=") and _is_plain_function(arg_tree)):
                        raise _Clash(f"a {show_type(arg)} where a value is expected")
            _unify(sig, ("fn", sig[1], *arg_types))
            if head in COMPARISONS:
                for t in map(_resolve, arg_types):
                    if isinstance(t, tuple) and t[0] == "fn":
                        raise _Clash("cannot order functions")
            return sig[1]
        except _Clash as exc:
            if self.untyped:
                return TVar()
            raise self.fail(f"type error in {head} ({exc})", tree) from None

    @staticmethod
    def partial_type(index: int, value_type, func_type):
        value_type, func_type = _resolve(value_type), _resolve(func_type)
        if isinstance(value_type, tuple) and value_type[0] in ("fn", "type"):
            raise _Clash("a partial's value cannot be a function or a type")
        if isinstance(func_type, TVar):
            return TVar()
        if func_type[0] != "fn":
            raise _Clash(f"partial of a non-function {show_type(func_type)}")
        params = list(func_type[2:])
        if len(params) <= index:
            raise _Clash(f"partial{index} of a function of {len(params)} arguments")
        _unify(params[index], value_type)
        return ("fn", func_type[1], *params[:index], *params[index + 1 :])

    @staticmethod
    def combine_type(outer, inner):
        inner = _resolve(inner)
        if isinstance(inner, TVar):
            _unify(outer, ("fn", TVar(), TVar()))
            return TVar()
        if inner[0] != "fn":
            raise _Clash(f"combine of a non-function {show_type(inner)}")
        result = TVar()
        _unify(outer, ("fn", result, inner[1]))
        return ("fn", result, *inner[2:])


def _is_plain_function(tree) -> bool:
    return tree == "self" or (isinstance(tree, list) and bool(tree) and tree[0] in ("lambda1", "lambda2"))


def _short(tree, limit: int = 120) -> str:
    text = repr(tree)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Program:
    """A compiled program: run it on many inputs."""

    def __init__(self, tree, arg_types: dict | None = None, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        types = {name: parse_arg_type(t) if isinstance(t, str) else t for name, t in (arg_types or {}).items()}
        self.arg_names = list(types)
        compiler = _Compiler(types, self.limits)
        try:
            self.root, self.type = compiler.build(tree, None, 0)
        except RecursionError:
            raise ExecutionError("program nested too deeply") from None
        result = _resolve(self.type)
        if isinstance(result, tuple) and result[0] in ("fn", "type"):
            raise ExecutionError(f"the program computes a {show_type(result)}, not a value")

    def run(self, inputs: dict, limits: Limits | None = None):
        limits = limits or self.limits
        missing = [name for name in self.arg_names if name not in inputs]
        if missing:
            raise ExecutionError(f"no value for inputs {missing}")
        machine = Machine(limits, copy.deepcopy(dict(inputs)))
        needed = limits.max_eval_depth * 6 + 500
        if sys.getrecursionlimit() < needed:
            sys.setrecursionlimit(needed)
        try:
            return self.root.ev(None, machine)
        except ExecutionError:
            raise
        except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, RecursionError, MemoryError) as exc:
            raise ExecutionError(f"{type(exc).__name__}: {exc}") from None


def compile_program(tree, arg_types: dict | None = None, limits: Limits | None = None) -> Program:
    """Check and type `tree` (arg_types: {name: 'int' | 'int[]' | ...}); raise ExecutionError."""
    return Program(tree, arg_types, limits)


def run(tree, inputs: dict, arg_types: dict | None = None, limits: Limits | None = None):
    """Value of `tree` on `inputs`; argument types default to those of the input values."""
    if arg_types is None:
        arg_types = {name: type_of_value(value) for name, value in inputs.items()}
    return Program(tree, arg_types, limits).run(inputs)


def outputs_equal(expected, actual) -> bool:
    """The reference's test comparison: Python equality (a range never equals a list)."""
    try:
        return bool(expected == actual)
    except Exception:  # noqa: BLE001 - any comparison failure is a mismatch
        return False


def run_tests(tree, tests: list[dict], arg_types: dict | None = None, limits: Limits | None = None) -> list[bool]:
    """Pass/fail of `tree` on each test {input: {...}, output: ...}; a static failure fails all."""
    if arg_types is None:
        first = tests[0]["input"] if tests else {}
        arg_types = {name: type_of_value(value) for name, value in first.items()}
    try:
        program = Program(tree, arg_types, limits)
    except ExecutionError:
        return [False] * len(tests)
    results = []
    for test in tests:
        try:
            results.append(outputs_equal(test["output"], program.run(test["input"])))
        except ExecutionError:
            results.append(False)
    return results
