"""The numbers n0, n1, ... of a MathQA problem, read the way the released solver does.

Rules of the released `solve.py` (`get_src_numbers`, `is_number`, `to_float`):

1. The problem is lower-cased and, in `faithful` mode, the substrings "1 / 4",
   "1 / 2", "1 / 3" are rewritten to "0.25", "0.5", "0.33" first (plain substring
   replacement, so "11 / 2" becomes "10.5" and "1 / 25" becomes "0.55").
2. The text is split on single spaces; a token is a number when, after deleting
   every "/", "," and ".", it is non-empty `str.isdigit()` and holds no super- or
   subscript digit (the script lists ², ³, ¹, ₂, ⁶, ₃, ⁹, ⁵, ₁, ₄, ⁷, ⁴, ⁸, ₈).
   So "8,000" is 8000, "2.5" is 2.5, "1.2.3" counts as a number, "50%" does not.
3. A number right after a "-" token is negated ("10 - 5" yields 10, -5).
4. Value: "a/b" is the fraction a / b (the script means this, though its
   `Fraction` is not imported there, so it would crash; the release has no such
   token), "/5" or "5/" drop the "/", commas and "_" are deleted, then float().
   A token float() cannot read (e.g. "1.2.3", which would crash the script) is
   skipped here and reported by `unreadable_numbers`.

`corrected` mode drops the substring rewrite of rule 1 (the rest is unchanged).
"""

from __future__ import annotations

from fractions import Fraction

_SCRIPT_DIGITS = set("²³¹₂⁶₃⁹⁵₁₄⁷⁴⁸₈")
_FRACTION_REWRITES = (("1 / 4", "0.25"), ("1 / 2", "0.5"), ("1 / 3", "0.33"))


def prepare_text(problem: str, mode: str = "faithful") -> str:
    """Lower-cased problem, with the faithful fraction rewrites."""
    text = problem.lower()
    if mode == "faithful":
        for old, new in _FRACTION_REWRITES:
            text = text.replace(old, new)
    return text


def is_number_token(word: str) -> bool:
    stripped = word.replace("/", "").replace(",", "").replace(".", "")
    return stripped.isdigit() and not (_SCRIPT_DIGITS & set(stripped))


def token_value(word: str) -> float:
    """Value of a number token; ValueError if it has none."""
    if "/" in word:
        left, _, right = word.partition("/")
        if not left or not right:
            return float(word.replace("/", ""))
        return float(Fraction(int(left), int(right.split("/")[0])))
    return float(word.replace(",", "").replace("_", ""))


def _scan(problem: str, mode: str) -> tuple[list[float], list[str]]:
    words = prepare_text(problem, mode).split(" ")
    values: list[float] = []
    unreadable: list[str] = []
    for i, word in enumerate(words):
        if not is_number_token(word):
            continue
        try:
            value = token_value(word)
        except (ValueError, ZeroDivisionError):
            unreadable.append(word)
            continue
        values.append(-value if i > 0 and words[i - 1] == "-" else value)
    return values, unreadable


def extract_numbers(problem: str, mode: str = "faithful") -> list[float]:
    """[n0, n1, ...] of `problem` under `mode`."""
    return _scan(problem, mode)[0]


def unreadable_numbers(problem: str, mode: str = "faithful") -> list[str]:
    """Tokens that look like numbers to the script but float() cannot read."""
    return _scan(problem, mode)[1]
