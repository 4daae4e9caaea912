"""The AlgoLisp reference executor's static type check, restated (same accept/reject decisions).

The reference (`program-synthesis==0.1.2`, `code_lisp.test_lisp_validity`) checks a program top
down: every node gets the type its parent expects and its own type must be *compatible* with it.
A builtin's parameter types may be rules of the expected type and of the types of its earlier
arguments, and its result type may be computed from them. The check is loose in places (a call
of `self`, of a lambda variable or of an input is typed without looking at its arguments; dict
key and value types are never compared; a lambda's result is never matched against its caller's
expectation) and strict in others (a lambda where "any function" is expected, or a branch typed
as a function where the other branch is a value, is refused). Facts, not code, come from it: any
exception its checker would raise is a `Rejected` here, and nothing else is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

# Kinds and their parents (the reference's type classes: Type, NotFuncType, Boolean, Number, String,
# Enumerable, Array, Dict, TypeType, FuncType, AnyFuncType, AnyType).
_PARENT = {
    "type": None,
    "value": "type",
    "bool": "value",
    "num": "value",
    "str": "value",
    "seq": "value",
    "arr": "seq",
    "dict": "seq",
    "typetype": "type",
    "fn": "type",
    "anyfn": "fn",
    "any": "type",
}
_FIELDS = {
    "arr": ("elem",), "dict": ("key", "value"), "typetype": ("base",), "fn": ("ret", "params"), "anyfn": ("ret", "params")
}


class Rejected(Exception):
    """The reference's check would raise here: the program is refused before it runs."""


class AnyArgs(tuple):
    """An empty parameter list standing for "at least `least` parameters"."""

    least: int

    def __new__(cls, least: int) -> "AnyArgs":
        self = super().__new__(cls)
        self.least = least
        return self


@dataclass(frozen=True, eq=False)
class Ty:
    """A type: its kind and its parts (arr: elem; dict: key, value; typetype: base; fn: ret, params)."""

    kind: str
    parts: tuple = ()

    def field(self, name: str):
        names = _FIELDS.get(self.kind, ())
        if name not in names:
            raise Rejected(f"{show(self)} has no {name}")
        return self.parts[names.index(name)]

    def __repr__(self) -> str:
        return show(self)


def show(t: Ty) -> str:
    if t.kind == "arr":
        return show(t.parts[0]) + "[]"
    if t.kind == "dict":
        return f"dict<{show(t.parts[0])},{show(t.parts[1])}>"
    if t.kind == "typetype":
        return f"type<{show(t.parts[0])}>"
    if t.kind == "fn":
        params = "..." if isinstance(t.parts[1], AnyArgs) else ",".join(map(show, t.parts[1]))
        return f"({params})->{show(t.parts[0])}"
    return t.kind


TYPE, VALUE, BOOL, NUM, STR, ANY = (Ty(kind) for kind in ("type", "value", "bool", "num", "str", "any"))
ANYFN = Ty("anyfn", (TYPE, AnyArgs(1)))


def arr(elem: Ty) -> Ty:
    return Ty("arr", (elem,))


def dct(key: Ty, value: Ty) -> Ty:
    return Ty("dict", (key, value))


def typetype(base: Ty) -> Ty:
    return Ty("typetype", (base,))


def fn(ret: Ty, params) -> Ty:
    return Ty("fn", (ret, params if isinstance(params, AnyArgs) else tuple(params)))


ARG_TYPES = {
    "any": TYPE,
    "int": NUM,
    "string": STR,
    "bool": BOOL,
    "int[]": arr(NUM),
    "string[]": arr(STR),
    "int[][]": arr(arr(NUM)),
    "dict<int,int>": dct(NUM, NUM),
    "dict<string,int>": dct(STR, NUM),
}


# ----------------------------------------------------------------------------------------------
# Compatibility: may a `t` stand where a `want` is expected?


def _is(kind: str | None, ancestor: str) -> bool:
    while kind is not None:
        if kind == ancestor:
            return True
        kind = _PARENT[kind]
    return False


def fits(t: Ty, want: Ty) -> bool:
    """The reference's `t.compatible(want)`; raises Rejected where it fails an assertion."""
    if t.kind == "any":
        return True
    if t.kind == "anyfn":
        return _is(want.kind, "fn")
    if t.kind == "typetype":
        return _is(want.kind, "typetype") and fits(t.field("base"), want.field("base"))
    if _is(t.kind, "value") and _is(want.kind, "fn"):
        return False
    if want.kind in ("any", "anyfn"):
        raise Rejected(f"{show(t)} compared with {show(want)}")
    if t.kind == "fn" and want.kind == "fn":
        return _fn_fits(t, want)
    if t.kind == "arr" and want.kind == "arr":
        return fits(t.field("elem"), want.field("elem"))
    return _is(t.kind, want.kind)


def _fn_fits(t: Ty, want: Ty) -> bool:
    if not fits(t.field("ret"), want.field("ret")):
        return False
    mine, theirs = t.field("params"), want.field("params")
    if not theirs:
        if not isinstance(theirs, AnyArgs):
            raise Rejected(f"{show(t)} compared with a function of no parameters")
        if len(mine) >= theirs.least:
            return True
    if len(mine) != len(theirs):
        return False
    return all([fits(their, my) for my, their in zip(mine, theirs)])  # noqa: C419 - every pair is compared


def _is_any(t: Ty) -> bool:
    return t.kind in ("any", "anyfn")


# ----------------------------------------------------------------------------------------------
# Signatures: a parameter is a type or a rule (expected type, earlier argument types) -> type.

Rule = Callable[[Ty, list], Ty]
Param = Union[Ty, Rule]


@dataclass(frozen=True)
class Sig:
    params: tuple
    ret: Ty
    computed: Rule | None = None  # the call's type from (expected type, argument types)


def _ret(t: Ty) -> Ty:
    return t.field("ret")


def _params(t: Ty) -> tuple:
    return t.field("params")


def _param(t: Ty, i: int) -> Ty:
    params = _params(t)
    if i >= len(params):
        raise Rejected(f"{show(t)} has no parameter {i}")
    return params[i]


def _like_expected(want: Ty, args: list) -> Ty:
    return want if want.kind == "arr" else arr(TYPE)


def _first(want: Ty, args: list) -> Ty:
    return args[0]


_PARTIAL_LEAST = {0: 2, 1: 2, 2: 3}  # what an unknown parameter list stands for, per partialK


def _partial_param(index: int) -> Rule:
    def rule(want: Ty, args: list) -> Ty:
        params = _params(want)
        if not params:
            return fn(_ret(want), AnyArgs(_PARTIAL_LEAST[index]))
        return fn(_ret(want), params[:index] + (args[0],) + params[index:])

    return rule


def _partial_result(index: int) -> Rule:
    def rule(want: Ty, args: list) -> Ty:
        params = _params(args[1])
        return fn(_ret(args[1]), params[:index] + params[index + 1 :])

    return rule


def _signatures() -> dict[str, Sig]:
    sigs = {"int": Sig((), typetype(NUM)), "true": Sig((), BOOL), "false": Sig((), BOOL)}
    sigs.update({c: Sig((), NUM) for c in ("0", "1", "2", "10", "40", "1000000000", "inf")})
    sigs.update({c: Sig((), STR) for c in ('""', '" "', '"z"')})
    sigs.update({op: Sig((NUM, NUM), NUM) for op in ("+", "-", "*", "/", "%", "pow", "min", "max")})
    sigs.update({op: Sig((NUM,), NUM) for op in ("sqrt", "floor", "square", "abs")})
    sigs.update({op: Sig((BOOL, BOOL), BOOL) for op in ("||", "&&")})
    sigs.update({op: Sig((VALUE, VALUE), BOOL) for op in ("<", ">", "<=", ">=")})
    sigs.update({op: Sig((TYPE, TYPE), BOOL) for op in ("==", "!=")})
    sigs.update({op: Sig((STR, STR), STR) for op in ("str_concat", "str_min", "str_max")})
    sigs.update({op: Sig((_like_expected,), arr(ANY), _first) for op in ("tail", "sort", "reverse")})
    sigs.update({f"partial{i}": Sig((VALUE, _partial_param(i)), ANYFN, _partial_result(i)) for i in range(3)})
    lambda_body = (lambda w, a: _ret(w) if _is(w.kind, "fn") else TYPE,)
    sigs.update(
        {
            "!": Sig((BOOL,), BOOL),
            "if": Sig((BOOL, lambda w, a: w, lambda w, a: a[1]), ANY, lambda w, a: a[1]),
            "reduce": Sig(
                (arr(TYPE), lambda w, a: w, lambda w, a: fn(a[1], (a[1], a[0].field("elem")))),
                ANY,
                lambda w, a: _ret(a[2]),
            ),
            "map": Sig(
                (arr(TYPE), lambda w, a: fn(w.field("elem") if w.kind == "arr" else TYPE, (a[0].field("elem"),))),
                arr(ANY),
                lambda w, a: arr(_ret(a[1])),
            ),
            "filter": Sig((_like_expected, lambda w, a: fn(BOOL, (a[0].field("elem"),))), arr(ANY), _first),
            "range": Sig((NUM, NUM), arr(NUM)),
            "invoke1": Sig((lambda w, a: fn(w, (NUM,)), lambda w, a: _param(a[0], 0)), ANY, lambda w, a: _ret(a[0])),
            "lambda1": Sig(lambda_body, fn(ANY, (NUM,))),
            "lambda2": Sig(lambda_body, fn(ANY, (NUM, NUM))),
            "combine": Sig(
                (lambda w, a: fn(_ret(w), (ANY,)), lambda w, a: fn(_param(a[0], 0), _params(w))),
                ANYFN,
                lambda w, a: fn(_ret(a[0]), _params(a[1])),
            ),
            "array-new": Sig(
                (lambda w, a: typetype(w.field("elem")) if w.kind == "arr" else typetype(TYPE),),
                arr(ANY),
                lambda w, a: arr(a[0].field("base")),
            ),
            "len": Sig((arr(TYPE),), NUM),
            "head": Sig((lambda w, a: arr(w),), ANY, lambda w, a: a[0].field("elem")),
            "deref": Sig((lambda w, a: arr(w), NUM), ANY, lambda w, a: a[0].field("elem")),
            "int-deref": Sig((arr(NUM), NUM), NUM),
            "slice": Sig((_like_expected, NUM, NUM), arr(ANY), _first),
            "append": Sig((_like_expected, lambda w, a: a[0].field("elem")), arr(ANY), _first),
            "strlen": Sig((STR,), NUM),
            "str_index": Sig((NUM, STR), STR),
            "str_split": Sig((STR, STR), arr(STR)),
            "dict-new": Sig(
                (
                    lambda w, a: typetype(w.field("key")) if w.kind == "dict" else typetype(TYPE),
                    lambda w, a: typetype(w.field("value")) if w.kind == "dict" else typetype(TYPE),
                ),
                dct(ANY, ANY),
                lambda w, a: dct(a[0].field("base"), a[1].field("base")),
            ),
            "dict-insert": Sig(
                (
                    lambda w, a: w if w.kind == "dict" else dct(TYPE, TYPE),
                    lambda w, a: a[0].field("key"),
                    lambda w, a: a[0].field("value"),
                ),
                dct(ANY, ANY),
                _first,
            ),
            "dict-keys": Sig(
                (lambda w, a: dct(w.field("elem"), TYPE) if w.kind == "arr" else dct(TYPE, TYPE),),
                arr(ANY),
                lambda w, a: arr(a[0].field("key")),
            ),
            "is_prime": Sig((NUM,), BOOL),
            "contains": Sig((arr(NUM), NUM), BOOL),
            "is_sorted_helper": Sig((NUM, arr(NUM)), BOOL),
            "is_sorted": Sig((arr(NUM),), BOOL),
            "digits": Sig((NUM,), arr(NUM)),
        }
    )
    return sigs


SIGNATURES = _signatures()


# ----------------------------------------------------------------------------------------------
# The check


def check(tree, arg_types: dict[str, Ty]) -> Ty:
    """The type of program `tree` over inputs of `arg_types`; raise Rejected as the reference would."""
    return _check(tree, dict(arg_types), TYPE)


def _check(tree, env: dict, want: Ty) -> Ty:
    if isinstance(tree, str):
        return _check_symbol(tree, env, want)
    if not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
        raise Rejected(f"not a symbol or a call: {tree!r}")
    head = tree[0]
    if head in env:
        return env[head]  # a call of self, a lambda variable or an input: its arguments are not checked
    if head not in SIGNATURES:
        raise Rejected(f"unknown function {head!r}")
    sig = SIGNATURES[head]
    if not fits(sig.ret, want):
        raise Rejected(f"{head} returns {show(sig.ret)} where {show(want)} is expected")
    if len(tree) - 1 != len(sig.params):
        raise Rejected(f"{head} takes {len(sig.params)} arguments, got {len(tree) - 1}")
    if head in ("lambda1", "lambda2"):
        return _check_lambda(1 if head == "lambda1" else 2, tree[1], env, want)
    args: list[Ty] = []
    for param, sub in zip(sig.params, tree[1:]):
        t = _check(sub, env, param(want, args) if callable(param) else param)
        if t.kind == "type":
            raise Rejected(f"argument {sub!r} of {head} has no definite type")
        args.append(t)
    if sig.computed is None:
        return sig.ret
    result = sig.computed(want, args)
    if not fits(result, want):
        raise Rejected(f"{head} computes {show(result)} where {show(want)} is expected")
    return result


def _check_lambda(params: int, body, env: dict, want: Ty) -> Ty:
    inner = dict(env, arg1=NUM)
    if params == 2:
        inner["arg2"] = NUM
    inner["self"] = fn(want, (NUM,) * params)  # the expected type of the lambda, not of its result
    return fn(_check(body, inner, _ret(want)), (NUM,) * params)


def _check_symbol(symbol: str, env: dict, want: Ty) -> Ty:
    if symbol in SIGNATURES:
        sig = SIGNATURES[symbol]
        result = _function_value(symbol, sig, want) if sig.params else sig.ret
    elif symbol in env:
        result = env[symbol]
    else:
        raise Rejected(f"unknown symbol {symbol!r}")
    if not fits(result, want):
        raise Rejected(f"{symbol} is a {show(result)} where {show(want)} is expected")
    return result


def _function_value(name: str, sig: Sig, want: Ty) -> Ty:
    """The type of builtin `name` passed as a function where `want` is expected."""
    if not _is(want.kind, "fn"):
        raise Rejected(f"function {name} where {show(want)} is expected")
    wanted = _params(want)
    if len(sig.params) != len(wanted):
        raise Rejected(f"{name} takes {len(sig.params)} arguments where {show(want)} is expected")
    for i, param in enumerate(sig.params):
        mine = param(sig.ret, wanted[:i]) if callable(param) else param
        if not _is_any(wanted[i]) and not fits(wanted[i], mine):
            raise Rejected(f"{name}: argument {i} is {show(mine)} where {show(wanted[i])} is passed")
    ret = _ret(want) if _is_any(sig.ret) else sig.ret
    return fn(ret, [wanted[i] if callable(param) else param for i, param in enumerate(sig.params)])
