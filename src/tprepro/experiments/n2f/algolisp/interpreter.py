"""A bounded interpreter of the AlgoLisp DSL (program trees as nested lists of strings).

A program is first checked: its size and depth are bounded, then the reference executor's static
type check (`typecheck`) accepts or rejects it exactly as the reference does, then it is compiled
(known symbols and arities, like the reference's compiler, even inside the unchecked arguments of
a `self` call). It then runs on inputs within `Limits`. A static refusal is a `RejectedProgram`, a
documented limit a `LimitExceeded` (see `DOCUMENTED_LIMITS`), any other failure at run time an
`ExecutionError`; nothing is ever passed to `eval`.

Semantics follow the DSL's reference executor (`program-synthesis==0.1.2`; facts, not code):
builtins act as the Python operations they are there, on whatever values they get (`len` of a
string, `+` of two strings), `/` on an int numerator is floor division, `floor` truncates toward
zero, `range` refuses more than 1000 elements and yields a range value (never equal to a list;
`append` to it fails), `if` is lazy while `&&`/`||` evaluate both sides and return an operand,
`partialK v f` inserts `v` as the K-th argument of `f`, `combine f g` is `x -> f(g(x))`,
`dict-insert` updates in place, and the Lisp-defined helpers (square, is_prime, min, max, str_min,
str_max, contains, is_sorted, abs, digits) compute what their Lisp definitions compute (e.g.
`is_prime` fails above 1,002,001 because its internal range would exceed 1000 elements). Lambda
variables are scoped dynamically: a lambda's body sees a copy of its caller's variables plus its
own `arg1`/`arg2`/`self`. A lambda may nest at most 110 calls deep (the reference's stack bound).
"""

from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from tprepro.errors import TpreproError
from tprepro.experiments.n2f.algolisp import typecheck
from tprepro.experiments.n2f.algolisp.typecheck import ARG_TYPES, Rejected, Ty


class ExecutionError(TpreproError):
    """The program is malformed, ill-typed, failed at run time or exceeded a limit."""


class RejectedProgram(ExecutionError):
    """Refused before running, as the reference refuses it (type check or compilation)."""


class LimitExceeded(ExecutionError):
    """A documented limit of this interpreter was hit (`limit`: its `Limits` field)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


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


@dataclass(frozen=True)
class LimitNote:
    """What happens at one limit, here and in the reference executor."""

    ours: str
    reference: str
    same_as_reference: bool = False  # the reference stops at the same bound: no divergence
    reference_errors: tuple[str, ...] = ()  # exceptions the reference raises at its own bound


_PYTHON_STACK = "Python's recursion limit (RecursionError)"

# The one table of this interpreter's limits (keys: `Limits` fields). The differential test skips
# a case that hits a limit here, or where the reference raises one of `reference_errors`.
DOCUMENTED_LIMITS: dict[str, LimitNote] = {
    "max_steps": LimitNote("the run fails", "no bound"),
    "timeout_s": LimitNote("the run fails", "no bound"),
    "max_call_depth": LimitNote("the run fails", "the same bound (\"Stack Overflow\")", same_as_reference=True),
    "max_eval_depth": LimitNote("the run fails", _PYTHON_STACK, reference_errors=("RecursionError",)),
    "max_int_bits": LimitNote("the run fails", "unbounded integers"),
    "max_length": LimitNote("the run fails", "unbounded arrays and strings"),
    "max_tree_nodes": LimitNote("the program is refused", "no bound"),
    "max_tree_depth": LimitNote("the program is refused", _PYTHON_STACK, reference_errors=("RecursionError",)),
}


def parse_arg_type(name) -> Ty:
    """The type of an argument declared as e.g. 'int[]' (or already a `typecheck.Ty`)."""
    if isinstance(name, Ty):
        return name
    if name not in ARG_TYPES:
        raise RejectedProgram(f"unknown argument type {name!r}")
    return ARG_TYPES[name]


def type_of_value(value) -> Ty:
    """A declared type for a concrete input value (arrays and dicts by their first element)."""
    if isinstance(value, bool):
        return typecheck.BOOL
    if isinstance(value, (int, float)):
        return typecheck.NUM
    if isinstance(value, str):
        return typecheck.STR
    if isinstance(value, (list, range)):
        return typecheck.arr(type_of_value(value[0]) if len(value) else typecheck.NUM)
    if isinstance(value, dict):
        return typecheck.dct(type_of_value(next(iter(value))) if value else typecheck.NUM, typecheck.NUM)
    return typecheck.TYPE


# ----------------------------------------------------------------------------------------------
# Run-time values: Python values, Python's `int` for the type symbol, and function values


class Func:
    """A function value."""

    __slots__ = ()


class Builtin(Func):
    """A builtin; `lenient`: defined in Lisp by the reference, so extra arguments are ignored."""

    __slots__ = ("name", "arity", "impl", "lenient")

    def __init__(self, name: str, arity: int, impl, lenient: bool = False) -> None:
        self.name, self.arity, self.impl, self.lenient = name, arity, impl, lenient

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


class Closure(Func):
    __slots__ = ("params", "body")

    def __init__(self, params: int, body) -> None:
        self.params, self.body = params, body

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
    "0": 0,
    "1": 1,
    "2": 2,
    "10": 10,
    "40": 40,
    "1000000000": 1000000000,
    "inf": float("inf"),
    '""': "",
    '" "': " ",
    '"z"': "z",
    "true": True,
    "false": False,
    "int": int,
}


# ----------------------------------------------------------------------------------------------
# The machine: counters, limits and the current lambda scope of one run


class Machine:
    __slots__ = ("limits", "env", "steps", "call_depth", "eval_depth", "deadline")

    def __init__(self, limits: Limits, inputs: dict) -> None:
        self.limits = limits
        self.env = inputs  # the variables in scope: inputs, then each lambda call's copy
        self.steps = 0
        self.call_depth = 0
        self.eval_depth = 0
        self.deadline = time.monotonic() + limits.timeout_s

    def enter(self) -> None:
        """One more nested evaluation (the caller decrements `eval_depth` when it returns)."""
        self.eval_depth += 1
        if self.eval_depth > self.limits.max_eval_depth:
            raise LimitExceeded("max_eval_depth", f"evaluation depth limit {self.limits.max_eval_depth} exceeded")

    def step(self, count: int = 1) -> None:
        before = self.steps
        self.steps += count
        if self.steps > self.limits.max_steps:
            raise LimitExceeded("max_steps", f"step limit {self.limits.max_steps} exceeded")
        if (before >> 10) != (self.steps >> 10) and time.monotonic() > self.deadline:
            raise LimitExceeded("timeout_s", f"time limit {self.limits.timeout_s}s exceeded")

    def bounded(self, x):
        """`x` after checking an int's bits or a sequence's length against the limits."""
        if type(x) is int and x.bit_length() > self.limits.max_int_bits:
            raise LimitExceeded("max_int_bits", f"integer larger than {self.limits.max_int_bits} bits")
        if type(x) in (str, list, dict) and len(x) > self.limits.max_length:
            raise LimitExceeded("max_length", f"sequence longer than {self.limits.max_length}")
        return x

    def apply(self, func, args: list):
        self.step()
        if isinstance(func, Builtin):
            if func.lenient and len(args) > func.arity:
                args = args[: func.arity]
            if len(args) != func.arity:
                raise ExecutionError(f"{func.name} takes {func.arity} arguments, got {len(args)}")
            return func.impl(self, *args)
        if isinstance(func, Closure):
            return self.call(func, args)
        if isinstance(func, Partial):
            return self.apply(func.func, args[: func.index] + [func.value] + args[func.index :])
        if isinstance(func, Combined):
            return self.apply(func.outer, [self.apply(func.inner, args)])
        raise ExecutionError(f"{func!r} is not a function")

    def call(self, func: Closure, args: list):
        """Run a lambda in a copy of the caller's scope (the reference's dynamic scoping)."""
        if len(args) != func.params:
            raise ExecutionError(f"lambda{func.params} called with {len(args)} arguments")
        if self.call_depth >= self.limits.max_call_depth:
            raise LimitExceeded("max_call_depth", f"call depth limit {self.limits.max_call_depth} exceeded")
        caller = self.env
        self.env = dict(caller, arg1=args[0], self=func)
        if func.params == 2:
            self.env["arg2"] = args[1]
        self.call_depth += 1
        result = func.body.ev(self)
        self.call_depth -= 1
        self.env = caller
        return result


# ----------------------------------------------------------------------------------------------
# Builtin implementations: impl(machine, *values), Python's operations with bounded results


def _times(m, x, y):
    for seq, count in ((x, y), (y, x)):
        if type(seq) in (str, list) and type(count) in (int, bool) and len(seq) * count > m.limits.max_length:
            raise LimitExceeded("max_length", f"sequence longer than {m.limits.max_length}")
    return m.bounded(x * y)


def _div(m, x, y):
    if y == 0:
        raise ExecutionError("division by zero")
    return m.bounded(x // y if isinstance(x, int) else x / y)


def _pow(m, x, y):
    if type(x) is int and type(y) is int and y > 0 and abs(x) > 1:
        if (abs(x).bit_length() - 1) * y > m.limits.max_int_bits:
            raise LimitExceeded("max_int_bits", f"integer larger than {m.limits.max_int_bits} bits")
    return m.bounded(x**y)


def _range(m, lo, hi):
    if hi - lo > 1000:
        raise ExecutionError("range of more than 1000 elements")
    return range(int(lo), int(hi))


def _items(m, collection) -> list:
    """The items of any iterable value (a string's characters, a dict's keys), one step each."""
    items = list(collection)
    m.step(len(items))
    return items


def _reduce(m, collection, init, func):
    acc = init
    for item in _items(m, collection):
        acc = m.apply(func, [acc, item])
    return acc


def _map(m, collection, func):
    return [m.apply(func, [item]) for item in _items(m, collection)]


def _filter(m, collection, func):
    return [item for item in _items(m, collection) if m.apply(func, [item])]


def _head(m, a):
    if len(a) == 0:
        raise ExecutionError("head of an empty array")
    return a[0]


def _deref(m, a, idx):
    if idx < 0 or idx >= len(a):
        raise ExecutionError(f"index {idx} out of bounds (length {len(a)})")
    return a[idx]


def _slice(m, a, lo, hi):
    return a[max(0, lo) : hi]


def _sort(m, a):
    m.step(len(a))
    return sorted(a)


def _str_split(m, s, sep):
    return [part for part in s.split(sep) if part]


def _dict_insert(m, d, key, value):
    d[key] = value
    return m.bounded(d)


def _is_prime(m, x):
    if x <= 1:
        return False
    hi = 1 + math.sqrt(x)
    if hi - 2 > 1000:
        raise ExecutionError("range of more than 1000 elements (is_prime)")
    found = False
    for divisor in range(2, int(hi)):
        m.step()
        hit = 0 == x % divisor  # every remainder is computed, as the reference's map does
        found = found or hit
    return not found


def _contains(m, a, x):
    found = False
    for item in [x == item for item in _items(m, a)]:
        found = found or item
    return found


def _is_sorted_helper(m, x, xs):
    result = True
    while len(xs) != 0:
        m.step()
        ordered = x <= xs[0]  # every pair is compared: the reference's `&&` is eager
        result = result and ordered
        x, xs = _head(m, xs), xs[1:]
    return result


def _is_sorted(m, a):
    return True if len(a) == 0 else _is_sorted_helper(m, _head(m, a), a[1:])


def _abs(m, a):
    return a if a > 0 else m.bounded(0 - a)


def _digits(m, a):
    n = _abs(m, a)
    out = []
    while not n < 10:
        m.step()
        out.append(n % 10)
        n = _div(m, n, 10)
    out.append(n)
    out.reverse()
    return out


def _special_form(name: str):
    def impl(m, *args):
        raise ExecutionError(f"special form {name} called as a function")

    return impl


_LISP_DEFINED = {
    "square", "is_prime", "min", "max", "str_min", "str_max", "contains", "is_sorted_helper", "is_sorted", "abs", "digits"
}


def _builtins() -> dict[str, Builtin]:
    table: dict[str, tuple[int, Any]] = {
        "+": (2, lambda m, x, y: m.bounded(x + y)),
        "-": (2, lambda m, x, y: m.bounded(x - y)),
        "*": (2, _times),
        "/": (2, _div),
        "%": (2, lambda m, x, y: m.bounded(x % y)),
        "pow": (2, _pow),
        "sqrt": (1, lambda m, x: math.sqrt(x)),
        "floor": (1, lambda m, x: int(float(x))),
        "!": (1, lambda m, x: not x),
        "||": (2, lambda m, x, y: x or y),
        "&&": (2, lambda m, x, y: x and y),
        "<": (2, lambda m, x, y: x < y),
        ">": (2, lambda m, x, y: x > y),
        "<=": (2, lambda m, x, y: x <= y),
        ">=": (2, lambda m, x, y: x >= y),
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
        "len": (1, lambda m, a: len(a)),
        "head": (1, _head),
        "tail": (1, lambda m, a: a[1:]),
        "deref": (2, _deref),
        "int-deref": (2, _deref),
        "slice": (3, _slice),
        "append": (2, lambda m, a, v: m.bounded(a + [v])),
        "sort": (1, _sort),
        "reverse": (1, lambda m, a: list(reversed(a))),
        "strlen": (1, lambda m, s: len(s)),
        "str_index": (2, lambda m, idx, s: s[int(idx)]),
        "str_concat": (2, lambda m, a, b: m.bounded(a + b)),
        "str_split": (2, _str_split),
        "dict-new": (2, lambda m, k, v: {}),
        "dict-insert": (3, _dict_insert),
        "dict-keys": (1, lambda m, d: sorted(d.keys())),
        "square": (1, lambda m, x: _times(m, x, x)),
        "is_prime": (1, _is_prime),
        "min": (2, lambda m, x, y: x if x <= y else y),
        "max": (2, lambda m, x, y: y if x <= y else x),
        "str_min": (2, lambda m, x, y: x if x <= y else y),
        "str_max": (2, lambda m, x, y: y if x <= y else x),
        "contains": (2, _contains),
        "is_sorted_helper": (2, _is_sorted_helper),
        "is_sorted": (1, _is_sorted),
        "abs": (1, _abs),
        "digits": (1, _digits),
        "if": (3, _special_form("if")),
        "lambda1": (1, _special_form("lambda1")),
        "lambda2": (1, _special_form("lambda2")),
    }
    return {name: Builtin(name, arity, impl, name in _LISP_DEFINED) for name, (arity, impl) in table.items()}


BUILTINS = _builtins()
FUNCTION_SYMBOLS = frozenset(BUILTINS)
ALL_SYMBOLS = FUNCTION_SYMBOLS | frozenset(CONSTANTS)


# ----------------------------------------------------------------------------------------------
# Compiled program nodes: ev(machine) -> value


class Const:
    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def ev(self, m):
        return self.value


class Var:
    """An input or a lambda variable, looked up in the current scope."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def ev(self, m):
        try:
            return m.env[self.name]
        except KeyError:
            raise ExecutionError(f"no value for {self.name!r} in this scope") from None


class Call:
    __slots__ = ("func", "args")

    def __init__(self, func: Builtin, args: list) -> None:
        self.func, self.args = func, args

    def ev(self, m):
        m.enter()
        values = [arg.ev(m) for arg in self.args]
        m.step()
        result = self.func.impl(m, *values)
        m.eval_depth -= 1
        return result


class VarCall:
    """A call of a variable's value: `self`, or (failing) a lambda variable or an input."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: list) -> None:
        self.name, self.args = name, args

    def ev(self, m):
        m.enter()
        values = [arg.ev(m) for arg in self.args]
        result = m.apply(Var(self.name).ev(m), values)
        m.eval_depth -= 1
        return result


class If:
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond, then, other) -> None:
        self.cond, self.then, self.other = cond, then, other

    def ev(self, m):
        m.enter()
        m.step()
        branch = self.then if self.cond.ev(m) else self.other
        result = branch.ev(m)
        m.eval_depth -= 1
        return result


class Fail:
    """An expression that fails when evaluated."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def ev(self, m):
        raise ExecutionError(self.message)


class Lambda:
    __slots__ = ("params", "body")

    def __init__(self, params: int, body) -> None:
        self.params, self.body = params, body

    def ev(self, m):
        return Closure(self.params, self.body)


# ----------------------------------------------------------------------------------------------
# Checks and compilation


def _check_size(tree, limits: Limits) -> None:
    """Bound the tree's node count and depth (before any recursive pass over it)."""
    nodes, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > limits.max_tree_nodes:
            raise LimitExceeded("max_tree_nodes", f"program has more than {limits.max_tree_nodes} nodes")
        if depth > limits.max_tree_depth:
            raise LimitExceeded("max_tree_depth", f"program nested deeper than {limits.max_tree_depth}")
        if isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)


class _Compiler:
    """Tree -> nodes, with the reference compiler's refusals (unknown symbols, wrong arities) and
    its notion of which symbols are variables: the inputs, the lambda variables of the enclosing
    lambdas, and `self` from the first lambda on (the reference never forgets it)."""

    def __init__(self, arg_names) -> None:
        self.names = set(arg_names)

    def fail(self, message: str, tree) -> RejectedProgram:
        return RejectedProgram(f"{message} in {_short(tree)}")

    def build(self, tree):
        if isinstance(tree, str):
            return self.symbol(tree)
        if isinstance(tree, (int, float)):
            return Const(tree)  # a number literal (reachable only inside a call of self)
        if not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
            raise self.fail("expected a symbol or a call", tree)
        head, args = tree[0], tree[1:]
        if head in BUILTINS:
            if len(args) != BUILTINS[head].arity:
                raise self.fail(f"{head} takes {BUILTINS[head].arity} arguments, got {len(args)}", tree)
        elif head not in self.names:
            raise self.fail(f"unknown function {head!r}", tree)
        if head in ("lambda1", "lambda2"):
            return self.lambda_(1 if head == "lambda1" else 2, args[0])
        nodes = [self.argument(arg) for arg in args]
        if head == "if":
            cond = nodes[0] if self.evaluated(args[0]) else Fail("an if condition must be a value")
            return If(cond, nodes[1], nodes[2])
        if head in BUILTINS:
            return Call(BUILTINS[head], nodes)
        return VarCall(head, nodes)

    def symbol(self, symbol: str):
        if symbol in CONSTANTS:
            return Const(CONSTANTS[symbol])
        if symbol in BUILTINS:
            return Const(BUILTINS[symbol])
        if symbol in self.names:
            return Var(symbol)
        raise RejectedProgram(f"unknown symbol {symbol!r}")

    def evaluated(self, arg) -> bool:
        """Whether the reference evaluates `arg` rather than passing it on as a function."""
        return not isinstance(arg, str) or arg in self.names or arg in CONSTANTS

    def argument(self, arg):
        if isinstance(arg, str) and arg in BUILTINS and arg in self.names:
            return Fail(f"{arg} called with no arguments")  # an input named like a builtin
        if not isinstance(arg, (str, list, int, float)):
            raise self.fail("expected a symbol or a call", arg)
        return self.build(arg)

    def lambda_(self, params: int, body_tree):
        evaluated = self.evaluated(body_tree)
        added = [name for name in ("arg1", "arg2")[:params] if name not in self.names]
        self.names.update(added)
        self.names.add("self")
        body = self.argument(body_tree)
        self.names.difference_update(added)
        if not evaluated:
            return Fail(f"a lambda body cannot be the function {body_tree!r}")
        return Lambda(params, body)


def _short(tree, limit: int = 120) -> str:
    text = repr(tree)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Program:
    """A checked, compiled program: run it on many inputs."""

    def __init__(self, tree, arg_types: dict | None = None, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        types = {name: parse_arg_type(t) for name, t in (arg_types or {}).items()}
        self.arg_names = list(types)
        _check_size(tree, self.limits)
        try:
            self.type = typecheck.check(tree, types)
        except Rejected as exc:
            raise RejectedProgram(f"type check: {exc}") from None
        self.root = _Compiler(self.arg_names).build(tree)

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
            return self.root.ev(machine)
        except ExecutionError:
            raise
        except RecursionError:
            raise LimitExceeded("max_eval_depth", "Python's stack exhausted") from None
        except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError, MemoryError) as exc:
            raise ExecutionError(f"{type(exc).__name__}: {exc}") from None


def compile_program(tree, arg_types: dict | None = None, limits: Limits | None = None) -> Program:
    """Check and compile `tree` (arg_types: {name: 'int' | 'int[]' | ...}); raise ExecutionError."""
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
