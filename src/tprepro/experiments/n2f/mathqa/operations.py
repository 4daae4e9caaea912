"""The MathQA operation table and constants, in two semantics.

`faithful` reproduces the execution script the MathQA authors released and TP-N2F
used for its execution accuracy (`Instruction.execute` in `new_DataStructure.py`,
driven by `solve.py`; read for facts, not copied). `corrected` is the mathematics
the operation name promises. Each implementation takes the argument values (floats)
and returns a number, or raises `OperationFailure` (a guard refused the input, or
a math error); the executor turns any failure into a clean failed step.

Quirks of the released script that `faithful` keeps (faithful vs corrected):

| operation | faithful (released script) | corrected |
| --- | --- | --- |
| sine / cosine / tangent | asin / acos / atan (inverse functions); asin, acos refuse x > 1 | sin / cos / tan (radians) |
| radians_to_degree | x * 180 (no division by pi) | x * 180 / pi |
| degree_to_radians | unimplemented (duplicate radians_to_degree branch): always fails | x * pi / 180 |
| choose | precedence slip: n! / k! * (n-k)!; larger argument is n; k must be 1..99 | C(n, k) |
| combination | not a recognised name (the script knows "choose"): fails | C(n, k), same as choose |
| permutation | larger argument is n when the larger is < 20: n! / (n-k)! | n! / (n-k)!, 0 <= k <= n |
| power | only base > 0 and 0 < exponent < 10 | any real result (bounded) |
| divide | fails when abs(divisor) <= 0.001 | fails only for 0 |
| gcd | Euclid on floats (sign of the 2nd argument); a gcd of 1 FAILS | integer gcd |
| lcm | a * b / float-Euclid gcd (may be negative) | integer lcm |
| factorial | factorial(int(x)) for x < 100 (truncates) | integral 0 <= x <= 170 |
| log | log base 2, x > 0 | log base 2, x > 0 (same) |
| round | 4-decimal rounding, +0.0001 when the 3rd decimal digit >= 5 | nearest integer, halves away from 0 |
| sum_consecutive_number | sum of int(a) .. int(b) - 1 (end excluded) | sum of a .. b inclusive (integers) |
| cube_edge_by_volume | x ** 0.33333 | exact cube root |
| percent | a / 100 * b only for 0 <= a <= 100 | a / 100 * b |
| original_price_before_loss | b * 100 / (100.00001 - a) | b * 100 / (100 - a) |
| combined_work / find_work | an argument > 1 is a time (inverted), <= 1 a rate | both arguments are times |
| price_after_gain, p_after_loss | missing comma in the script's name list: fails | (1 + a/100) b, (1 - a/100) b |
| const_pi / const_deg_to_rad | 3.1415 / 0.0055 | math.pi / pi / 180 |

Arguments follow the script: circle_arc(angle, radius), circle_sector_area(radius,
angle), surface_cone(radius, height), union_prob(p_a, p_b, p_ab) (p_a, p_b in
[0, 1]), triangle_area_three_edges needs a strict triangle inequality.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The release's operation_list.txt, in order (it lists "reminder" twice).
OPERATION_LIST: tuple[str, ...] = (
    "add", "subtract", "multiply", "divide", "log", "sqrt", "factorial", "gcd", "lcm", "power",
    "max", "min", "reminder", "reminder", "negate", "inverse", "round", "floor", "sine", "cosine",
    "tangent", "radians_to_degree", "degree_to_radians", "sum_consecutive_number", "circle_area",
    "circumface", "circle_arc", "semi_circle_perimiter", "circle_sector_area",
    "rectangle_perimeter", "rectangle_area", "square_perimeter", "square_area", "trapezium_area",
    "rhombus_perimeter", "rhombus_area", "quadrilateral_area", "volume_cone",
    "volume_rectangular_prism", "volume_cube", "volume_sphere", "volume_cylinder", "surface_cone",
    "surface_cylinder", "surface_cube", "surface_rectangular_prism", "surface_sphere",
    "side_by_diagonal", "cube_edge_by_volume", "diagonal", "square_edge_by_perimeter",
    "square_edge_by_area", "triangle_perimeter", "triangle_area", "triangle_area_three_edges",
    "union_prob", "negate_prob", "combination", "permutation", "count_interval", "percent",
    "p_after_gain", "p_after_loss", "price_after_gain", "price_after_loss", "from_percent",
    "gain_percent", "loss_percent", "negate_percent", "original_price_before_gain",
    "original_price_before_loss", "to_percent", "speed", "combined_work", "find_work",
    "speed_ratio_steel_to_stream", "speed_in_still_water", "stream_speed",
)

# Names the data uses beyond operation_list.txt: "choose" (88 uses in dev+test; the
# list calls it "combination").
EXTRA_OPERATIONS: tuple[str, ...] = ("choose",)

MODES = ("faithful", "corrected")
LIMIT = 1e300  # corrected results beyond this magnitude count as overflow


class OperationFailure(ArithmeticError):
    """An operation refused its arguments (domain guard, overflow, unknown name)."""


@dataclass(frozen=True)
class Operation:
    name: str
    arity: int
    faithful: Callable[..., float]
    corrected: Callable[..., float]

    def apply(self, args: Sequence[float], mode: str) -> float:
        """Result of the operation on `args` under `mode`; raises OperationFailure."""
        if len(args) != self.arity:
            raise OperationFailure(f"{self.name} takes {self.arity} arguments, got {len(args)}")
        function = self.faithful if mode == "faithful" else self.corrected
        try:
            value = function(*args)
            if value is None:
                raise OperationFailure(f"{self.name}{tuple(args)}: refused by the guard")
            value = float(value)  # an exact int result beyond the float range overflows here
        except OperationFailure:
            raise
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise OperationFailure(f"{self.name}{tuple(args)}: {exc}") from exc
        if mode == "corrected" and not (math.isfinite(value) and abs(value) <= LIMIT):
            raise OperationFailure(f"{self.name}{tuple(args)}: result {value} out of range")
        return value


def _fail(reason: str) -> float:
    raise OperationFailure(reason)


def _integral(x: float, name: str, bound: float = 1e15) -> int:
    if not (math.isfinite(x) and x == int(x) and abs(x) <= bound):
        raise OperationFailure(f"{name}: {x} is not an integer in range")
    return int(x)


# ---- faithful helpers (behaviour of the released script) ----------------------------

def _float_euclid(a: float, b: float) -> float:
    """Euclid's algorithm on floats; the result takes the sign of b (fractions.gcd)."""
    steps = 0
    while b:
        a, b = b, a % b
        steps += 1
        if steps > 10_000:
            raise OperationFailure("gcd: no convergence")
    return a


def _f_gcd(a, b):
    result = _float_euclid(a, b)
    return None if result == 1 else result


def _f_round(x):
    rounded = float(f"{x:.4f}")
    return rounded + 0.0001 if (x * 1000) % 10 > 4 else rounded


def _f_sum_consecutive(a, b):
    start, stop = int(a), int(b)  # range(start, stop): stop excluded
    return 0 if stop <= start else (start + stop - 1) * (stop - start) // 2


def _f_choose(a, b):
    n, k = int(a), int(b)
    if not (n < 100 and k < 100 and k > 0):
        return None
    if n <= k:
        n, k = k, n
    return math.factorial(n) / math.factorial(k) * math.factorial(n - k)


def _f_permutation(a, b):
    if b - a > 0 and b < 20:
        n, k = b, a
    elif a < 20:
        n, k = a, b
    else:
        return None
    if n - k != int(n - k) or n - k < 0:  # math.factorial of a fractional/negative float
        raise OperationFailure("permutation: factorial of a non-integer or negative")
    if n - k > 1000:  # n < 20, so n! / (n-k)! underflows to 0.0 (computing (n-k)! could take hours)
        return 0.0
    return math.factorial(int(n)) / math.factorial(int(n - k))


def _f_work(a, b, combine: bool):
    a = 1.0 / a if a > 1 else a
    b = 1.0 / b if b > 1 else b
    return 1.0 / (a + b) if combine else 1.0 / (max(a, b) - min(a, b))


def _f_triangle_three_edges(a, b, c):
    edges = [a, b, c]
    largest = max(range(3), key=lambda i: (edges[i], -i))  # first maximum, like the script
    if sum(e for i, e in enumerate(edges) if i != largest) <= edges[largest]:
        return None
    p = (a + b + c) / 2
    return math.sqrt(p * (p - a) * (p - b) * (p - c))


# ---- corrected helpers --------------------------------------------------------------

def _c_power(a, b):
    return math.pow(a, b)  # ValueError for a negative base with a fractional exponent


def _c_factorial(x):
    n = _integral(x, "factorial", 170)
    if n < 0:
        raise OperationFailure("factorial of a negative number")
    return math.factorial(n)


def _c_choose(a, b):
    n, k = _integral(a, "choose", 1000), _integral(b, "choose", 1000)
    if not 0 <= k <= n:
        raise OperationFailure(f"choose({n}, {k}) undefined")
    return math.comb(n, k)


def _c_permutation(a, b):
    n, k = _integral(a, "permutation", 1000), _integral(b, "permutation", 1000)
    if not 0 <= k <= n:
        raise OperationFailure(f"permutation({n}, {k}) undefined")
    return math.perm(n, k)


def _c_round(x):
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def _c_sum_consecutive(a, b):
    start, stop = _integral(a, "sum_consecutive_number"), _integral(b, "sum_consecutive_number")
    return 0 if stop < start else (start + stop) * (stop - start + 1) // 2


def _c_triangle_three_edges(a, b, c):
    p = (a + b + c) / 2
    area2 = p * (p - a) * (p - b) * (p - c)
    if min(a, b, c) <= 0 or area2 < 0:
        raise OperationFailure("triangle_area_three_edges: not a triangle")
    return math.sqrt(area2)


def _guard(condition: bool, value: Callable[[], float]) -> float | None:
    return value() if condition else None


def _same(function: Callable[..., float]) -> tuple[Callable[..., float], Callable[..., float]]:
    return function, function


_PI = math.pi
_TABLE: dict[str, tuple[int, Callable[..., float], Callable[..., float]]] = {
    # arithmetic
    "add": (2, *_same(lambda a, b: a + b)),
    "subtract": (2, *_same(lambda a, b: a - b)),
    "multiply": (2, *_same(lambda a, b: a * b)),
    "divide": (2, lambda a, b: _guard(abs(b) > 0.001, lambda: a / b), lambda a, b: a / b),
    "log": (1, *_same(lambda x: _guard(x > 0, lambda: math.log(x, 2)))),
    "sqrt": (1, *_same(lambda x: _guard(x >= 0, lambda: math.sqrt(x)))),
    "factorial": (1, lambda x: _guard(x < 100, lambda: math.factorial(int(x))), _c_factorial),
    "gcd": (2, _f_gcd, lambda a, b: math.gcd(_integral(a, "gcd"), _integral(b, "gcd"))),
    "lcm": (2, lambda a, b: a * b / _float_euclid(a, b),
            lambda a, b: math.lcm(_integral(a, "lcm"), _integral(b, "lcm"))),
    "power": (2, lambda a, b: _guard(b < 10 and a > 0 and b > 0, lambda: a ** b), _c_power),
    "max": (2, *_same(max)),
    "min": (2, *_same(min)),
    "reminder": (2, *_same(lambda a, b: _guard(b != 0, lambda: a % b))),
    "negate": (1, *_same(lambda x: -x)),
    "inverse": (1, *_same(lambda x: _guard(x != 0, lambda: 1.0 / x))),
    "round": (1, _f_round, _c_round),
    "floor": (1, *_same(math.floor)),
    # trigonometry
    "sine": (1, lambda x: _guard(x <= 1, lambda: math.asin(x)), math.sin),
    "cosine": (1, lambda x: _guard(x <= 1, lambda: math.acos(x)), math.cos),
    "tangent": (1, math.atan, math.tan),
    "radians_to_degree": (1, lambda x: x * 180, lambda x: x * 180 / _PI),
    "degree_to_radians": (1, lambda x: None, lambda x: x * _PI / 180),
    "sum_consecutive_number": (2, _f_sum_consecutive, _c_sum_consecutive),
    # geometry
    "circle_area": (1, *_same(lambda r: r * r * _PI)),
    "circumface": (1, *_same(lambda r: r * 2 * _PI)),
    "circle_arc": (2, *_same(lambda angle, r: angle / 360.0 * _PI * 2 * r)),
    "semi_circle_perimiter": (1, *_same(lambda r: _PI * r + 2 * r)),
    "circle_sector_area": (2, *_same(lambda r, angle: _guard(0 <= angle <= 360, lambda: angle / 360.0 * _PI * r * r))),
    "rectangle_perimeter": (2, *_same(lambda a, b: (a + b) * 2)),
    "rectangle_area": (2, *_same(lambda a, b: a * b)),
    "square_perimeter": (1, *_same(lambda a: a * 4)),
    "square_area": (1, *_same(lambda a: a * a)),
    "trapezium_area": (3, *_same(lambda h, a, b: 0.5 * h * (a + b))),
    "rhombus_perimeter": (1, *_same(lambda a: a * 4)),
    "rhombus_area": (2, *_same(lambda d1, d2: d1 * d2 / 2)),
    "quadrilateral_area": (3, *_same(lambda d, h1, h2: 0.5 * d * (h1 + h2))),
    "volume_cone": (2, *_same(lambda r, h: r * r * h * _PI / 3)),
    "volume_rectangular_prism": (3, *_same(lambda a, b, c: a * b * c)),
    "volume_cube": (1, *_same(lambda a: a * a * a)),
    "volume_sphere": (1, *_same(lambda r: 4.0 / 3 * _PI * r * r * r)),
    "volume_cylinder": (2, *_same(lambda r, h: _PI * r * r * h)),
    "surface_cone": (2, *_same(lambda r, h: _PI * r * (r + math.sqrt(r * r + h * h)))),
    "surface_cylinder": (2, *_same(lambda r, h: 2 * _PI * (r * h + r * r))),
    "surface_cube": (1, *_same(lambda a: a * a * 6)),
    "surface_rectangular_prism": (3, *_same(lambda a, b, c: 2 * (a * b + b * c + a * c))),
    "surface_sphere": (1, *_same(lambda r: 4 * _PI * r * r)),
    "side_by_diagonal": (2, *_same(lambda d, a: _guard(d * d - a * a >= 0, lambda: math.sqrt(d * d - a * a)))),
    "cube_edge_by_volume": (1, lambda v: _guard(v >= 0, lambda: v ** 0.33333),
                            lambda v: _guard(v >= 0, lambda: math.cbrt(v) if hasattr(math, "cbrt") else v ** (1 / 3))),
    "diagonal": (2, *_same(lambda a, b: math.sqrt(a * a + b * b))),
    "square_edge_by_perimeter": (1, *_same(lambda p: p / 4)),
    "square_edge_by_area": (1, *_same(lambda s: math.sqrt(s))),
    "triangle_perimeter": (3, *_same(lambda a, b, c: a + b + c)),
    "triangle_area": (2, *_same(lambda b, h: b * h / 2.0)),
    "triangle_area_three_edges": (3, _f_triangle_three_edges, _c_triangle_three_edges),
    # probability
    "union_prob": (3, *_same(lambda a, b, ab: _guard(0 <= a <= 1 and 0 <= b <= 1, lambda: a + b - ab))),
    "negate_prob": (1, *_same(lambda p: _guard(0 <= p <= 1, lambda: 1 - p))),
    "choose": (2, _f_choose, _c_choose),
    "combination": (2, lambda a, b: _fail("combination: not a name the released script knows"), _c_choose),
    "permutation": (2, _f_permutation, _c_permutation),
    "count_interval": (2, *_same(lambda a, b: a - b + 1)),
    # gain
    "percent": (2, lambda a, b: _guard(0 <= a <= 100, lambda: a / 100 * b), lambda a, b: a / 100 * b),
    "p_after_gain": (2, *_same(lambda pct, p: (1 + pct / 100) * p)),
    "p_after_loss": (2, lambda pct, p: _fail("p_after_loss: missing from the script's name list"),
                     lambda pct, p: (1 - pct / 100) * p),
    "price_after_gain": (2, lambda pct, p: _fail("price_after_gain: missing from the script's name list"),
                         lambda pct, p: (1 + pct / 100) * p),
    "price_after_loss": (2, *_same(lambda pct, p: (1 - pct / 100) * p)),
    "from_percent": (1, *_same(lambda x: x / 100)),
    "gain_percent": (1, *_same(lambda x: 100 + x)),
    "loss_percent": (1, *_same(lambda x: 100 - x)),
    "negate_percent": (1, *_same(lambda x: 100 - x)),
    "original_price_before_gain": (2, *_same(lambda pct, p: p * 100.0 / (100 + pct))),
    "original_price_before_loss": (2, lambda pct, p: p * 100.0 / (100.00001 - pct),
                                   lambda pct, p: p * 100.0 / (100 - pct)),
    "to_percent": (1, *_same(lambda x: x * 100)),
    # physics
    "speed": (2, *_same(lambda d, t: d / t)),
    "combined_work": (2, lambda a, b: _f_work(a, b, True), lambda a, b: 1.0 / (1.0 / a + 1.0 / b)),
    "find_work": (2, lambda a, b: _f_work(a, b, False), lambda a, b: 1.0 / abs(1.0 / a - 1.0 / b)),
    "speed_ratio_steel_to_stream": (2, *_same(lambda down, up: (down + up) / (down - up))),
    "speed_in_still_water": (2, *_same(lambda a, b: (a + b) / 2)),
    "stream_speed": (2, *_same(lambda a, b: (a - b) / 2)),
}

OPERATIONS: dict[str, Operation] = {
    name: Operation(name, arity, faithful, corrected) for name, (arity, faithful, corrected) in _TABLE.items()
}
assert set(OPERATION_LIST) | set(EXTRA_OPERATIONS) == set(OPERATIONS)


def operation(name: str) -> Operation:
    """The Operation called `name`; TpreproError-compatible OperationFailure if unknown."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise OperationFailure(f"unknown operation {name!r}") from None


def arity(name: str) -> int:
    return operation(name).arity


# ---- constants ----------------------------------------------------------------------

# constant_list.txt (upper case there; the formulas write them in lower case with "_"
# for the decimal point) plus the constants dev/test formulas use beyond it:
# const_5, const_12, const_26, const_52, const_360, const_0.5 and the ".0" spellings
# const_2.0, const_3.0, const_4.0, const_60.0, const_100.0.
CONSTANT_LIST: tuple[str, ...] = (
    "const_pi", "const_2", "const_1", "const_3", "const_4", "const_6", "const_10", "const_100",
    "const_1000", "const_60", "const_3600", "const_1_6", "const_0_6", "const_0_2778",
    "const_0_3937", "const_2_54", "const_0_4535", "const_2_2046", "const_3_6", "const_deg_to_rad",
    "const_180", "const_0_25", "const_0_33",
)
EXTRA_CONSTANTS: tuple[str, ...] = (
    "const_5", "const_12", "const_26", "const_52", "const_360", "const_0.5",
    "const_2.0", "const_3.0", "const_4.0", "const_60.0", "const_100.0",
)

# solve.py rewrites these substrings of a prediction before reading constants.
_FAITHFUL_REWRITES = (("0_3937", "0.3937"), ("const_0_33", "const_0.33"), ("const_0_25", "const_0.25"),
                      ("0_2778", "0.2778"), ("0_6", "0.6"), ("1_6", "1.6"), ("3_6", "3.6"))


def constant_value(name: str, mode: str) -> float:
    """Value of `const_*` `name` under `mode`; OperationFailure if it names no number.

    faithful: const_pi = 3.1415, const_deg_to_rad = 0.0055, else float() of the text after
    "const_" once the script's substring rewrites ran; float() takes "_" as a digit
    separator, so const_2_54 reads 254.0 and const_0_4535 reads 4535.0 (unused in dev/test).
    corrected: math.pi, pi / 180, else the text with "_" read as the decimal point.
    """
    if not name.startswith("const_"):
        raise OperationFailure(f"{name!r} is not a constant")
    if name == "const_pi":
        return 3.1415 if mode == "faithful" else math.pi
    if name == "const_deg_to_rad":
        return 0.0055 if mode == "faithful" else math.pi / 180
    text = name
    if mode == "faithful":
        for old, new in _FAITHFUL_REWRITES:
            text = text.replace(old, new)
    else:
        text = text[:6] + text[6:].replace("_", ".")
    try:
        return float(text[6:])
    except ValueError:
        raise OperationFailure(f"constant {name!r} has no numeric value") from None
