"""The two-variable arithmetic data of Wangperawong (2018), "Attending to Mathematical Language with Transformers".

A problem assigns integers in [-1000, 1000] to `x` and `y`, in random order, then
names an expression over {+, -, *} of the two variables; the answer is its value:

    question: "x = 85, y = -523, x*y"      answer: "-44455"
    question: "y = 129, x = 531, x-y"      answer: "402"

Reading of the paper (its Sec. "Experimental Methods" and Table 3):
- The type labels `a+a`, `a-a`, `a*a` are the symmetric expressions, one variable
  used twice (`x+x`, `y-y`, `x*x`, ...): the other assignment is a distractor.
  `a+b`, `a-b`, `a*b` are the asymmetric ones (`x+y`, `y+x`, `x-y`, `y-x`, ...).
  Table 3's last column is printed "a + b" but the text makes it `a*b`.
- The expression is written without spaces and with `*` for the paper's ×, the
  assignments as "<var> = <int>" joined by ", " (the issue's example format).
- The answer is the plain decimal integer (a leading "-" when negative).
- "About 12 million unique samples ... randomly split ... 9:1": every problem
  is a distinct (x, y, assignment order, expression) and the test set shares no
  problem with the training set.

Sampling without replacement: the problem space has 2001 * 2001 * 2 * 12 =
96,096,024 members, numbered by `decode`. A keyed Feistel permutation of that
range (round keys from sha256 of the seed) maps sample position p to problem
number perm(p); positions [0, n_train) form the training split and the rest the
test split. Each row is therefore a pure function of (seed, position): shards
can be written in any order or by any number of processes and are the same
bytes, with no shared state, Python hash or global random stream involved. The
six types are equally likely (two of the twelve expressions each).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from tprepro.data.shards import write_dataset
from tprepro.errors import TpreproError

LOW, HIGH = -1000, 1000
VALUES = HIGH - LOW + 1
VARIABLES = ("x", "y")
# (type label, expression): two expressions per type, so the types are equally likely.
EXPRESSIONS = (
    ("a+a", "x+x"), ("a+a", "y+y"), ("a-a", "x-x"), ("a-a", "y-y"), ("a*a", "x*x"), ("a*a", "y*y"),
    ("a+b", "x+y"), ("a+b", "y+x"), ("a-b", "x-y"), ("a-b", "y-x"), ("a*b", "x*y"), ("a*b", "y*x"),
)  # fmt: skip
TYPES = tuple(dict.fromkeys(label for label, _ in EXPRESSIONS))
# MLflow metric names may not contain "+" or "*".
METRIC_NAMES = {"a+a": "a_plus_a", "a-a": "a_minus_a", "a*a": "a_times_a",
                "a+b": "a_plus_b", "a-b": "a_minus_b", "a*b": "a_times_b"}


def metric_name(key: str) -> str:
    """A table column as an MLflow metric name: "a+b" -> "a_plus_b", "a*b_std" -> "a_times_b_std"."""
    for label, name in METRIC_NAMES.items():
        if key == label or key.startswith(f"{label}_"):
            return name + key[len(label):]
    return key
SPACE = VALUES * VALUES * 2 * len(EXPRESSIONS)  # distinct problems
TRAIN, TEST = "train", "test"
SPLITS = (TRAIN, TEST)
SOURCE = "two_variable"

_HALF_BITS = 14  # the permutation runs on 2**28 >= SPACE numbers and walks back into range
_HALF_MASK = np.uint64((1 << _HALF_BITS) - 1)
_ROUNDS = 6
assert SPACE <= 1 << (2 * _HALF_BITS)


def _round_keys(seed: int) -> list[np.uint64]:
    keys = []
    for r in range(_ROUNDS):
        digest = hashlib.sha256(f"tprepro-two-variable\0{seed}\0{r}".encode()).digest()
        keys.append(np.uint64(int.from_bytes(digest[:8], "big")))
    return keys


def _mix(half: np.ndarray, key: np.uint64) -> np.ndarray:
    """The Feistel round function: a keyed 64-bit mixer (any function keeps the permutation bijective)."""
    z = (half + key) * np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(31)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(29)
    return z & _HALF_MASK


def permute(positions: np.ndarray, seed: int) -> np.ndarray:
    """A seeded bijection of [0, SPACE) onto itself, applied elementwise (cycle-walking Feistel)."""
    keys = _round_keys(seed)
    out = positions.astype(np.uint64)
    todo = np.ones(out.shape, dtype=bool)
    while todo.any():
        left, right = out[todo] >> np.uint64(_HALF_BITS), out[todo] & _HALF_MASK
        for key in keys:
            left, right = right, left ^ _mix(right, key)
        out[todo] = (left << np.uint64(_HALF_BITS)) | right
        todo = out >= np.uint64(SPACE)
    return out.astype(np.int64)


def decode(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Problem numbers -> (x, y, y_first, expression index), all arrays of len(numbers)."""
    rest, expression = np.divmod(numbers, len(EXPRESSIONS))
    rest, y_first = np.divmod(rest, 2)
    y, x = np.divmod(rest, VALUES)
    return x + LOW, y + LOW, y_first.astype(bool), expression


def evaluate(expression: str, x: int, y: int) -> int:
    """The value of `expression` (e.g. "y-x") at (x, y)."""
    a, op, b = expression
    values = {"x": x, "y": y}
    left, right = values[a], values[b]
    return {"+": left + right, "-": left - right, "*": left * right}[op]


def problems(positions: np.ndarray, seed: int, split: str) -> list[dict]:
    """The rows (SCHEMA columns) at sample `positions`; `module` holds the type label."""
    xs, ys, y_firsts, expressions = decode(permute(positions, seed))
    rows = []
    for x, y, y_first, index in zip(xs.tolist(), ys.tolist(), y_firsts.tolist(), expressions.tolist()):
        label, expression = EXPRESSIONS[index]
        first, second = (("y", y), ("x", x)) if y_first else (("x", x), ("y", y))
        question = f"{first[0]} = {first[1]}, {second[0]} = {second[1]}, {expression}"
        rows.append({"question": question, "answer": str(evaluate(expression, x, y)),
                     "module": label, "split": split, "difficulty": ""})
    return rows


def split_sizes(size: int, test_fraction: float) -> dict[str, int]:
    """Rows per split: round(size * test_fraction) test rows, the rest train; both at least 1."""
    if not 2 <= size <= SPACE:
        raise TpreproError(f"two_variable.data.size: must be in [2, {SPACE}] (distinct problems), got {size}")
    test = round(size * test_fraction)
    if not 1 <= test < size:
        raise TpreproError(
            f"two_variable.data.test_fraction: {test_fraction} of {size} gives {test} test rows; need 1..{size - 1}"
        )
    return {TRAIN: size - test, TEST: test}


def write_two_variable(out: str | Path, *, seed: int, size: int, test_fraction: float,
                       rows_per_shard: int) -> dict[str, Path]:
    """Write `out/train` and `out/test` (parquet shards + manifest); return the two directories."""
    if rows_per_shard < 1:
        raise TpreproError(f"two_variable.data.rows_per_shard: must be >= 1, got {rows_per_shard}")
    sizes = split_sizes(size, test_fraction)
    starts = {TRAIN: 0, TEST: sizes[TRAIN]}
    directories = {}
    for split in SPLITS:
        directories[split] = Path(out) / split
        begin, end = starts[split], starts[split] + sizes[split]
        shards = (problems(np.arange(start, min(start + rows_per_shard, end), dtype=np.int64), seed, split)
                  for start in range(begin, end, rows_per_shard))
        write_dataset(directories[split], shards, split=split, seed=seed, size=size,
                      test_fraction=test_fraction, source=SOURCE)
    return directories
