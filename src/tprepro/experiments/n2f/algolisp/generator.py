"""Synthetic AlgoLisp-format problems, and random programs for differential testing.

`generate(n, seed)` draws each problem from a template (arithmetic, map/filter/reduce with
partials and lambdas, recursion through self/invoke1, digits, strings, sorting, ...), fills in
its operators and constants, samples 10 random inputs and computes the outputs with this
package's interpreter (inputs are re-drawn until all 10 run; a template instance that keeps
failing is skipped). Records follow the metaset3 schema: text tokens, short_tree, args,
return_type, tests, funcs [], tags [], nodes [template name].

Noise (documented): a share `noise_rate` (default 0.1, as AlgoLisp's ~10%) of problems has
between 1 and 10 of its test outputs perturbed after computation (int +1, bool negated, list
with one more element, string with "z" appended), so its gold program fails those tests and
`metrics.is_clean` drops it from the cleaned set. The same seed gives byte-identical records.

`random_tree` composes random well-typed expressions over the inputs RANDOM_ARGS, beyond the
templates; `mutate_tree` makes (mostly ill-typed or malformed) variants of a tree.
"""

from __future__ import annotations

import json
import random
from typing import Callable

from tprepro.experiments.n2f.algolisp.interpreter import ExecutionError, Program

NUM_TESTS = 10


# ----------------------------------------------------------------------------------------------
# Input samplers


def _int(rng: random.Random, lo: int = -20, hi: int = 30) -> int:
    return rng.randint(lo, hi)


def _ints(rng: random.Random, lo: int = -10, hi: int = 20, min_len: int = 0, max_len: int = 8) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(rng.randint(min_len, max_len))]


_WORDS = ["ab", "cat", "z", "dog", "x", "lisp", "tree", "a", "zz", "map"]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))]
    return (" " * rng.randint(1, 2)).join(words)


# ----------------------------------------------------------------------------------------------
# Templates: each returns (text tokens, tree, args, return_type, sampler(rng) -> inputs)

def _t_arith(rng):
    op = rng.choice(["+", "-", "*"])
    words = {"+": "sum", "-": "difference", "*": "product"}[op]
    text = f"given numbers a and b , compute the {words} of a and b".split()
    return text, [op, "a", "b"], {"a": "int", "b": "int"}, "int", lambda r: {"a": _int(r), "b": _int(r)}


def _t_map_partial(rng):
    op = rng.choice(["+", "-", "*"])
    verb = {"+": "increments", "-": "decrements", "*": "multiplies"}[op]
    text = f"consider an array of numbers and a number , {verb} each element in the given array by the given number , what is the given array ?".split()
    tree = ["map", "a", ["partial1", "b", op]]
    return text, tree, {"a": "int[]", "b": "int"}, "int[]", lambda r: {"a": _ints(r), "b": _int(r, -5, 5)}


def _t_reduce(rng):
    op, init, word = rng.choice([("+", "0", "sum"), ("*", "1", "product"), ("max", ["-", "0", "1000000000"], "maximum")])
    text = f"given an array of numbers a , find the {word} of its elements".split()
    tree = ["reduce", "a", init, op]
    sampler = (lambda r: {"a": _ints(r, -5, 6, 0, 6)}) if op == "*" else (lambda r: {"a": _ints(r)})
    return text, tree, {"a": "int[]"}, "int", sampler


def _t_filter_compare(rng):
    op = rng.choice([">", "<", "=="])
    word = {">": "greater than", "<": "less than", "==": "equal to"}[op]
    text = f"given an array of numbers a and a number b , keep the elements of a that are {word} b".split()
    tree = ["filter", "a", ["partial1", "b", op]]
    return text, tree, {"a": "int[]", "b": "int"}, "int[]", lambda r: {"a": _ints(r), "b": _int(r, -5, 15)}


def _t_count_parity(rng):
    rem = rng.choice(["0", "1"])
    word = "even" if rem == "0" else "odd"
    text = f"given an array of numbers a , how many {word} numbers does it contain".split()
    tree = ["len", ["filter", "a", ["lambda1", ["==", ["%", "arg1", "2"], rem]]]]
    return text, tree, {"a": "int[]"}, "int", lambda r: {"a": _ints(r)}


def _t_factorial(rng):
    text = "consider a number a , compute factorial of a".split()
    tree = ["invoke1", ["lambda1", ["if", ["==", "arg1", "1"], "1", ["*", ["self", ["-", "arg1", "1"]], "arg1"]]], "a"]
    return text, tree, {"a": "int"}, "int", lambda r: {"a": _int(r, 1, 12)}


def _t_fibonacci(rng):
    text = "given a number a , find the a-th fibonacci number".split()
    body = ["if", ["<=", "arg1", "1"], "arg1", ["+", ["self", ["-", "arg1", "1"]], ["self", ["-", "arg1", "2"]]]]
    return text, ["invoke1", ["lambda1", body], "a"], {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 12)}


def _t_digit_sum(rng):
    text = "given a number a , find the sum of its digits".split()
    return text, ["reduce", ["digits", "a"], "0", "+"], {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 100000)}


def _t_recursive_digits(rng):
    text = "given a number a , find how many times you can replace a with sum of its digits before it becomes a single digit number".split()
    body = ["if", ["==", ["len", ["digits", "arg1"]], "1"], "0", ["+", "1", ["self", ["reduce", ["digits", "arg1"], "0", "+"]]]]
    return text, ["invoke1", ["lambda1", body], "a"], {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 100000)}


def _t_reverse_number(rng):
    text = "given a number a , reverse digits in a".split()
    tree = ["reduce", ["reverse", ["digits", "a"]], "0", ["lambda2", ["+", ["*", "arg1", "10"], "arg2"]]]
    return text, tree, {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 99999)}


def _t_median(rng):
    text = "given an array of numbers a , find the median of a".split()
    tree = ["deref", ["sort", "a"], ["/", ["len", "a"], "2"]]
    return text, tree, {"a": "int[]"}, "int", lambda r: {"a": _ints(r, min_len=1)}


def _t_sort(rng):
    descending = rng.random() < 0.5
    order = "descending" if descending else "ascending"
    text = f"given an array of numbers a , sort it in {order} order".split()
    tree = ["reverse", ["sort", "a"]] if descending else ["sort", "a"]
    return text, tree, {"a": "int[]"}, "int[]", lambda r: {"a": _ints(r)}


def _t_primes(rng):
    text = "given an array of numbers a , how many of its elements are prime".split()
    return text, ["len", ["filter", "a", "is_prime"]], {"a": "int[]"}, "int", lambda r: {"a": _ints(r, -5, 60)}


def _t_squares(rng):
    text = "given an array of numbers a , square each of its elements".split()
    return text, ["map", "a", "square"], {"a": "int[]"}, "int[]", lambda r: {"a": _ints(r)}


def _t_range_sum(rng):
    text = "given a number a , find the sum of all numbers from 0 to a inclusive".split()
    tree = ["reduce", ["range", "0", ["+", "a", "1"]], "0", "+"]
    return text, tree, {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 60)}


def _t_abs_diff(rng):
    text = "given numbers a and b , find the absolute difference between a and b".split()
    return text, ["abs", ["-", "a", "b"]], {"a": "int", "b": "int"}, "int", lambda r: {"a": _int(r), "b": _int(r)}


def _t_min_max(rng):
    op = rng.choice(["min", "max"])
    word = "smaller" if op == "min" else "larger"
    text = f"given numbers a and b , find the {word} of them".split()
    return text, [op, "a", "b"], {"a": "int", "b": "int"}, "int", lambda r: {"a": _int(r), "b": _int(r)}


def _t_is_sorted(rng):
    text = "given an array of numbers a , is it sorted in non-decreasing order ?".split()
    return text, ["is_sorted", "a"], {"a": "int[]"}, "bool", lambda r: {"a": sorted(_ints(r)) if r.random() < 0.4 else _ints(r)}


def _t_contains(rng):
    text = "given an array of numbers a and a number b , does a contain b ?".split()
    return text, ["contains", "a", "b"], {"a": "int[]", "b": "int"}, "bool", lambda r: {"a": _ints(r, 0, 6), "b": _int(r, 0, 6)}


def _t_count_value(rng):
    text = "given an array of numbers a and a number b , how many times does b occur in a".split()
    tree = ["len", ["filter", "a", ["partial0", "b", "=="]]]
    return text, tree, {"a": "int[]", "b": "int"}, "int", lambda r: {"a": _ints(r, 0, 4), "b": _int(r, 0, 4)}


def _t_combine(rng):
    k = rng.choice(["2", "10"])
    text = f"given an array of numbers a , add one to each element and multiply the result by {k}".split()
    tree = ["map", "a", ["combine", ["partial0", k, "*"], ["partial1", "1", "+"]]]
    return text, tree, {"a": "int[]"}, "int[]", lambda r: {"a": _ints(r)}


def _t_strlen(rng):
    text = "given a string s , find its length".split()
    return text, ["strlen", "s"], {"s": "string"}, "int", lambda r: {"s": _sentence(r)}


def _t_concat(rng):
    text = "given strings s and t , write t after s".split()
    return text, ["str_concat", "s", "t"], {"s": "string", "t": "string"}, "string", lambda r: {"s": _sentence(r), "t": _sentence(r)}


def _t_word_count(rng):
    text = "given a string s , count the words in it separated by spaces".split()
    return text, ["len", ["str_split", "s", '" "']], {"s": "string"}, "int", lambda r: {"s": _sentence(r)}


def _t_longest_word(rng):
    text = "given a string s , find its lexicographically largest word".split()
    tree = ["reduce", ["str_split", "s", '" "'], '""', "str_max"]
    return text, tree, {"s": "string"}, "string", lambda r: {"s": _sentence(r)}


def _t_slice(rng):
    text = "given an array of numbers a and a number b , take two elements of a starting at position b".split()
    tree = ["slice", "a", "b", ["+", "b", "2"]]
    return text, tree, {"a": "int[]", "b": "int"}, "int[]", lambda r: {"a": _ints(r), "b": _int(r, 0, 6)}


def _t_sum_squares_below(rng):
    text = "given a number a , find the sum of squares of numbers from 1 to a".split()
    tree = ["reduce", ["map", ["range", "1", ["+", "a", "1"]], "square"], "0", "+"]
    return text, tree, {"a": "int"}, "int", lambda r: {"a": _int(r, 0, 30)}


def _t_digit_filter(rng):
    text = "given an array of numbers a and a number b , keep the elements whose digits sum to b".split()
    tree = ["filter", "a", ["lambda1", ["==", ["reduce", ["digits", "arg1"], "0", "+"], "b"]]]
    return text, tree, {"a": "int[]", "b": "int"}, "int[]", lambda r: {"a": _ints(r, 0, 40), "b": _int(r, 1, 9)}


TEMPLATES: dict[str, Callable] = {
    name[3:]: fn for name, fn in sorted(globals().items()) if name.startswith("_t_") and callable(fn)
}


# ----------------------------------------------------------------------------------------------
# Records


def _json_roundtrips(value) -> bool:
    try:
        return json.loads(json.dumps(value, allow_nan=False)) == value and not isinstance(value, range)
    except (TypeError, ValueError):
        return False


def _perturb(value, rng: random.Random):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "z"
    if isinstance(value, list):
        return value + [rng.randint(0, 9)]
    return value


def _make_tests(program: Program, sampler, rng: random.Random, tries: int = 100) -> list[dict] | None:
    tests = []
    for _ in range(tries):
        inputs = sampler(rng)
        try:
            output = program.run(inputs)
        except ExecutionError:
            continue
        if _json_roundtrips(output):
            tests.append({"input": inputs, "output": output})
            if len(tests) == NUM_TESTS:
                return tests
    return None


def generate(n: int, seed: int, noise_rate: float = 0.1) -> list[dict]:
    """`n` AlgoLisp-format records, deterministic in `seed`."""
    rng = random.Random(seed)
    names = sorted(TEMPLATES)
    records = []
    while len(records) < n:
        name = rng.choice(names)
        text, tree, args, return_type, sampler = TEMPLATES[name](rng)
        tests = _make_tests(Program(tree, args), sampler, rng)
        if tests is None:
            continue
        if rng.random() < noise_rate:
            for index in rng.sample(range(NUM_TESTS), rng.randint(1, NUM_TESTS)):
                tests[index]["output"] = _perturb(tests[index]["output"], rng)
        records.append(
            {
                "text": text,
                "short_tree": tree,
                "args": args,
                "return_type": return_type,
                "tests": tests,
                "funcs": [],
                "tags": [],
                "nodes": [name],
            }
        )
    return records


# ----------------------------------------------------------------------------------------------
# Random programs beyond the templates (differential testing)

RANDOM_ARGS = {"a": "int[]", "b": "int", "c": "int", "s": "string"}


def random_inputs(rng: random.Random) -> dict:
    """Inputs for RANDOM_ARGS."""
    return {"a": _ints(rng, -10, 20, 0, 6), "b": _int(rng, -6, 12), "c": _int(rng, -3, 40), "s": _sentence(rng)}


class _Composer:
    """Random well-typed expressions of type int, bool, int[], string or string[]."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, options):
        return self.rng.choice(options)

    def expr(self, kind: str, depth: int, lam: int):
        """`lam`: 0 outside a lambda, 1 or 2 inside lambda1/lambda2 (arg1, arg2 visible)."""
        leafy = depth <= 0 or self.rng.random() < 0.25
        return getattr(self, kind)(depth - 1, lam, leafy)

    def int(self, d, lam, leafy):
        leaves = ["b", "c", "0", "1", "2", "10"] + (["arg1"] * 2 if lam else []) + (["arg2"] if lam == 2 else [])
        if leafy:
            return self.pick(leaves)
        e = self.expr
        choice = self.rng.randrange(14)
        if choice < 4:
            return [self.pick(["+", "-", "*", "/", "%", "min", "max"]), e("int", d, lam), e("int", d, lam)]
        return [
            lambda: ["len", e("arr", d, lam)],
            lambda: ["head", e("arr", d, lam)],
            lambda: ["reduce", e("arr", d, lam), e("int", d, lam), self.fn2(d, lam)],
            lambda: ["deref", e("arr", d, lam), e("int", d, lam)],
            lambda: ["strlen", e("str", d, lam)],
            lambda: [self.pick(["abs", "square"]), e("int", d, lam)],
            lambda: ["invoke1", ["lambda1", e("int", d, 1)], e("int", d, lam)],
            lambda: ["if", e("bool", d, lam), e("int", d, lam), e("int", d, lam)],
            lambda: ["invoke1", ["lambda1", ["if", ["<=", "arg1", "0"], e("int", d, lam), ["+", "arg1", ["self", ["-", "arg1", "1"]]]]], e("int", d, lam)],
            lambda: ["floor", ["sqrt", ["abs", e("int", d, lam)]]],
        ][choice - 4]()

    def bool(self, d, lam, leafy):
        if leafy:
            return self.pick(["true", "false"])
        e = self.expr
        return self.pick(
            [
                lambda: [self.pick(["<", ">", "<=", ">=", "==", "!="]), e("int", d, lam), e("int", d, lam)],
                lambda: ["!", e("bool", d, lam)],
                lambda: [self.pick(["&&", "||"]), e("bool", d, lam), e("bool", d, lam)],
                lambda: ["is_prime", e("int", d, lam)],
                lambda: ["contains", e("arr", d, lam), e("int", d, lam)],
                lambda: ["is_sorted", e("arr", d, lam)],
                lambda: ["==", e("str", d, lam), e("str", d, lam)],
            ]
        )()

    def arr(self, d, lam, leafy):
        if leafy:
            return "a"
        e = self.expr
        return self.pick(
            [
                lambda: ["map", e("arr", d, lam), self.fn1(d, lam)],
                lambda: ["filter", e("arr", d, lam), self.pred(d, lam)],
                lambda: [self.pick(["sort", "reverse", "tail"]), e("arr", d, lam)],
                lambda: ["slice", e("arr", d, lam), e("int", d, lam), e("int", d, lam)],
                lambda: ["range", e("int", d, lam), e("int", d, lam)],
                lambda: ["append", e("arr", d, lam), e("int", d, lam)],
                lambda: ["digits", e("int", d, lam)],
                lambda: ["array-new", "int"],
                lambda: ["if", e("bool", d, lam), e("arr", d, lam), e("arr", d, lam)],
            ]
        )()

    def str(self, d, lam, leafy):
        if leafy:
            return self.pick(["s", '" "', '"z"', '""'])
        e = self.expr
        return self.pick(
            [
                lambda: ["str_concat", e("str", d, lam), e("str", d, lam)],
                lambda: ["str_index", e("int", d, lam), e("str", d, lam)],
                lambda: [self.pick(["str_min", "str_max"]), e("str", d, lam), e("str", d, lam)],
                lambda: ["reduce", e("strs", d, lam), '""', self.pick(["str_concat", "str_max", "str_min"])],
            ]
        )()

    def strs(self, d, lam, leafy):
        split = ["str_split", self.expr("str", d, lam), self.pick(['" "', '"z"'])]
        return split if leafy or self.rng.random() < 0.6 else [self.pick(["sort", "reverse"]), split]

    def fn1(self, d, lam):
        e = self.expr
        return self.pick(
            [
                lambda: [self.pick(["partial0", "partial1"]), e("int", d, lam), self.pick(["+", "-", "*", "/", "%", "min", "max"])],
                lambda: self.pick(["square", "abs"]),
                lambda: ["lambda1", e("int", d, 1)],
                lambda: ["combine", self.fn1(d - 1, lam), self.fn1(d - 1, lam)],
            ]
        )()

    def pred(self, d, lam):
        e = self.expr
        return self.pick(
            [
                lambda: [self.pick(["partial0", "partial1"]), e("int", d, lam), self.pick(["<", ">", "==", "!=", "<=", ">="])],
                lambda: "is_prime",
                lambda: ["lambda1", e("bool", d, 1)],
            ]
        )()

    def fn2(self, d, lam):
        return self.pick([lambda: self.pick(["+", "*", "-", "min", "max"]), lambda: ["lambda2", self.expr("int", d, 2)]])()


def random_tree(rng: random.Random, max_depth: int = 4, kind: str | None = None):
    """A random well-typed program over RANDOM_ARGS."""
    kind = kind or rng.choice(["int", "int", "bool", "arr", "arr", "str"])
    return _Composer(rng).expr(kind, max_depth, 0)


def _subtree_paths(tree, path=()):
    yield path
    if isinstance(tree, list):
        for i, child in enumerate(tree[1:], start=1):
            yield from _subtree_paths(child, path + (i,))


def _replace(tree, path, new):
    if not path:
        return new
    copy = list(tree)
    copy[path[0]] = _replace(tree[path[0]], path[1:], new)
    return copy


def _get(tree, path):
    for i in path:
        tree = tree[i]
    return tree


def mutate_tree(rng: random.Random, tree):
    """A variant of `tree`: a sub-tree swapped for a random symbol or expression, an argument
    dropped or added, a head renamed, or two arguments swapped (mostly ill-typed)."""
    path = rng.choice(list(_subtree_paths(tree)))
    node = _get(tree, path)
    kind = rng.randrange(5)
    if kind == 0 or not isinstance(node, list):
        other = rng.choice(["a", "b", "s", "true", '"z"', "+", "len", "arg1", "self", "foo", "int", "inf"])
        return _replace(tree, path, other if rng.random() < 0.7 else random_tree(rng, 2))
    if kind == 1 and len(node) > 1:
        drop = rng.randrange(1, len(node))
        return _replace(tree, path, node[:drop] + node[drop + 1 :])
    if kind == 2:
        return _replace(tree, path, node + [rng.choice(["b", "a", "1"])])
    if kind == 3:
        return _replace(tree, path, [rng.choice(["map", "filter", "+", "strlen", "head", "unknown", "self"])] + node[1:])
    if len(node) >= 3:
        i, j = rng.sample(range(1, len(node)), 2)
        swapped = list(node)
        swapped[i], swapped[j] = node[j], node[i]
        return _replace(tree, path, swapped)
    return _replace(tree, path, random_tree(rng, 2))
