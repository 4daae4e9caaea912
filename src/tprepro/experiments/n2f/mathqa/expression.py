"""Arithmetic strings of answer options ("4*pi", "sqrt(3)/2", "2^5"), as the solver reads them.

The released solver evaluates a cleaned option with a pyparsing grammar (the
classic "fourFn" calculator). This is an independent recursive-descent parser for
the same language that builds the same postfix stack and evaluates it the same way:

    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "/") factor)*
    factor := atom ("^" factor)*                      (right-associative)
    atom   := ["+" | "-"] (name "(" expr ")" | "pi" | "e" | number)
            | ["+" | "-"] "(" expr ")"
    number := [+-]digits ["." [digits]] [("e"|"E") [+-]digits]

Functions: sin cos tan exp abs trunc round sqrt (sgn fails away from 0, as in
the script); an unknown function name evaluates to 0 and leaves its argument on the
stack, exactly as the script's stack machine does. Whitespace is not allowed (the
caller removes it). Any error gives None.
"""

from __future__ import annotations

import math
import string

_LETTERS = frozenset(string.ascii_letters)
_DIGITS = frozenset(string.digits)
_NAME_CHARS = _LETTERS | _DIGITS | {"_", "$"}

_FUNCTIONS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "abs": abs,
    "trunc": lambda a: int(a), "round": round, "sqrt": math.sqrt, "sgn": lambda a: _sgn(a),
}


def _sgn(a: float) -> float:
    """The script's sgn calls Python 2's cmp: 0 near zero, an error otherwise."""
    if abs(a) > 1e-12:
        raise ValueError("sgn: cmp() does not exist in Python 3")
    return 0
_BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "/": lambda a, b: a / b, "^": lambda a, b: a ** b}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.stack: list[str] = []

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expr(self) -> None:
        self.term()
        while self.peek() in ("+", "-") and self.peek():
            op = self.peek()
            self.pos += 1
            self.term()
            self.stack.append(op)

    def term(self) -> None:
        self.factor()
        while self.peek() in ("*", "/") and self.peek():
            op = self.peek()
            self.pos += 1
            self.factor()
            self.stack.append(op)

    def factor(self) -> None:
        self.atom()
        while self.peek() == "^":
            self.pos += 1
            self.factor()
            self.stack.append("^")

    def atom(self) -> None:
        sign = ""
        if self.peek() in ("+", "-") and self.peek():
            sign = self.peek()
            self.pos += 1
        if self.peek() == "(":
            self.pos += 1
            self.expr()
            self.expect(")")
        else:
            self.stack.append(self.operand())
        if sign == "-":
            self.stack.append("unary -")

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at {self.pos} in {self.text!r}")
        self.pos += 1

    def operand(self) -> str:
        text, start = self.text, self.pos
        if self.peek() in _LETTERS and self.peek():
            end = start
            while end < len(text) and text[end] in _NAME_CHARS:
                end += 1
            name = text[start:end]
            if end < len(text) and text[end] == "(":
                self.pos = end + 1
                self.expr()
                self.expect(")")
                return name
            if text[start:start + 2].lower() == "pi":
                self.pos = start + 2
                return "PI"
            if text[start].lower() == "e":
                self.pos = start + 1
                return "E"
            raise ValueError(f"unexpected name {name!r}")
        return self.number()

    def number(self) -> str:
        text, end = self.text, self.pos
        if end < len(text) and text[end] in "+-":
            end += 1
        digits_start = end
        while end < len(text) and text[end] in _DIGITS:
            end += 1
        if end == digits_start:
            raise ValueError(f"expected a number at {self.pos} in {text!r}")
        if end < len(text) and text[end] == ".":
            end += 1
            while end < len(text) and text[end] in _DIGITS:
                end += 1
        if end < len(text) and text[end] in "eE":
            exp_end = end + 1
            if exp_end < len(text) and text[exp_end] in "+-":
                exp_end += 1
            exp_digits = exp_end
            while exp_end < len(text) and text[exp_end] in _DIGITS:
                exp_end += 1
            if exp_end > exp_digits:
                end = exp_end
        token = text[self.pos:end]
        self.pos = end
        return token


def _evaluate(stack: list[str]) -> float:
    op = stack.pop()
    if op == "unary -":
        return -_evaluate(stack)
    if op in _BINARY:
        right = _evaluate(stack)
        left = _evaluate(stack)
        return _BINARY[op](left, right)
    if op == "PI":
        return math.pi
    if op == "E":
        return math.e
    if op in _FUNCTIONS:
        return _FUNCTIONS[op](_evaluate(stack))
    if op[0].isalpha():
        return 0
    return float(op)


def evaluate_expression(text: str) -> float | None:
    """Value of an arithmetic string, or None (syntax error, math error, complex result)."""
    try:
        parser = _Parser(text)
        parser.expr()
        if parser.pos != len(text):
            return None
        return float(_evaluate(parser.stack[:]))
    except (ValueError, ArithmeticError, TypeError, IndexError, RecursionError):
        return None
