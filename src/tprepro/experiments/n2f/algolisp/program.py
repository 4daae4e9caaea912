"""AlgoLisp program trees <-> straight-line command sequences of relational tuples (arity 3).

`tree_to_tuples` walks the tree post-order, children left to right: every call (a list
`[head, arg...]`) becomes one tuple `(head, arg_1, arg_2, arg_3)`, where an argument that is
itself a call is replaced by `#i`, the index of that call's tuple, and a symbol stays inline;
missing arguments are `NO_ARG`. A lambda is a call like any other: its body is sequenced first
and the lambda tuple refers to it (TP-N2F App. A.4: "(== arg1 1) (- arg1 1) (self #1) (* #2 arg1)
(if #0 1 #3) (lambda1 #4) (invoke1 #5 a)"). Repeated sub-trees are repeated, never shared.

Documented encodings:
- a program that is a single symbol (no call) is one tuple `(<leaf>, symbol)`;
- a call without arguments `[head]` is `(head, <none>, <none>, <none>)`;
- no DSL function takes more than 3 arguments, so a call with more is rejected (TpreproError);
- tokens may not hold a space or a "|" (the string format's separators), yet the DSL has the
  logical-or symbol `||` and the string literal '" "'; in every token a backslash is written
  `\\\\`, a space `\\s` and a "|" `\\p`, so `||` travels as `\\p\\p` and '" "' as '"\\s"'
  (no DSL symbol holds a backslash). Symbols starting with "#" and the reserved tokens
  `<leaf>` and `<none>` are rejected.

`tuples_to_tree` is the exact inverse on every sequence `tree_to_tuples` produces. On other
sequences (model outputs) a reference must point to an earlier tuple, and every tuple but the
last must be used; with `allow_shared=True` a tuple may be used more than once (its tree is
then repeated). Anything else raises TpreproError.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from tprepro.experiments.n2f.tuples import NO_ARG, format_program, pad_tuple, parse_program, strip_tuple
from tprepro.errors import TpreproError

ARITY = 3
LEAF = "<leaf>"  # relation of a program that is a single symbol
RESERVED = frozenset({LEAF, NO_ARG})

_ESCAPES = {"\\": "\\\\", " ": "\\s", "|": "\\p"}
_UNESCAPES = {"\\": "\\", "s": " ", "p": "|"}


def encode_symbol(symbol) -> str:
    """The token of a tree symbol (string literals escaped)."""
    if not isinstance(symbol, str) or not symbol:
        raise TpreproError(f"program symbol {symbol!r} is not a non-empty string")
    if symbol in RESERVED or symbol.startswith("#"):
        raise TpreproError(f"program symbol {symbol!r} is reserved")
    return "".join(_ESCAPES.get(ch, ch) for ch in symbol)


def decode_symbol(token: str) -> str:
    """Inverse of encode_symbol."""
    if "\\" not in token:
        return token
    inner, out, i = token, [], 0
    while i < len(inner):
        if inner[i] == "\\":
            if i + 1 >= len(inner) or inner[i + 1] not in _UNESCAPES:
                raise TpreproError(f"bad escape in string token {token!r}")
            out.append(_UNESCAPES[inner[i + 1]])
            i += 2
        else:
            out.append(inner[i])
            i += 1
    return "".join(out)


def tree_to_tuples(tree, arity: int = ARITY) -> list[tuple[str, ...]]:
    """Post-order command sequence of `tree` (nested lists of strings)."""
    if isinstance(tree, str):
        return [pad_tuple(LEAF, [encode_symbol(tree)], arity)]
    _check_depth(tree)
    program: list[tuple[str, ...]] = []
    # Iterative post-order: (node, processed children tokens)
    stack: list[tuple[list, list[str]]] = [(_check_call(tree, arity), [])]
    while stack:
        node, tokens = stack[-1]
        if len(tokens) < len(node) - 1:
            child = node[1 + len(tokens)]
            if isinstance(child, list):
                stack.append((_check_call(child, arity), []))
            else:
                tokens.append(encode_symbol(child))
            continue
        stack.pop()
        program.append(pad_tuple(encode_symbol(node[0]), tokens, arity))
        if stack:
            stack[-1][1].append(f"#{len(program) - 1}")
    return program


MAX_DEPTH = 200  # deepest call nesting accepted (metaset3 trees are far shallower); deeper JSON
# could not be read back (json's recursion), so it is refused when a record is loaded


def _check_depth(tree) -> None:
    """TpreproError if `tree` nests calls deeper than MAX_DEPTH (checked without recursion)."""
    level = [tree]
    for _ in range(MAX_DEPTH):
        level = [child for node in level if isinstance(node, list) for child in node[1:] if isinstance(child, list)]
        if not level:
            return
    raise TpreproError(f"program nests calls more than {MAX_DEPTH} deep")


def _check_call(node, arity: int) -> list:
    if not isinstance(node, list):
        raise TpreproError(f"{node!r} is neither a symbol (string) nor a call (list)")
    if not node or not isinstance(node[0], str):
        raise TpreproError(f"call {node!r} has no symbol at its head")
    if len(node) - 1 > arity:
        raise TpreproError(f"call {node[0]!r} has {len(node) - 1} arguments; the tuple arity is {arity}")
    return node


def _reference(token: str, position: int) -> int | None:
    if not token.startswith("#"):
        return None
    digits = token[1:]
    if not digits.isdigit() or not digits.isascii():
        raise TpreproError(f"tuple {position}: bad reference {token!r}")
    index = int(digits)
    if index >= position:
        raise TpreproError(f"tuple {position}: reference {token} does not point to an earlier tuple")
    return index


def tuples_to_tree(program: Sequence[Sequence[str]], allow_shared: bool = False):
    """The tree of a command sequence (inverse of tree_to_tuples)."""
    if not program:
        raise TpreproError("empty program")
    built: list = []
    uses = [0] * len(program)
    for position, item in enumerate(program):
        if not item:
            raise TpreproError(f"tuple {position} is empty")
        relation, args = strip_tuple(item)
        if NO_ARG in args:
            raise TpreproError(f"tuple {position}: {NO_ARG} before a real argument")
        if relation == LEAF:
            if len(program) != 1 or len(args) != 1 or args[0].startswith("#"):
                raise TpreproError(f"tuple {position}: {LEAF} must be the whole program, with one symbol")
            return decode_symbol(args[0])
        if relation in RESERVED or relation.startswith("#"):
            raise TpreproError(f"tuple {position}: {relation!r} is not a relation")
        node = [decode_symbol(relation)]
        for token in args:
            index = _reference(token, position)
            if index is None:
                node.append(decode_symbol(token))
                continue
            uses[index] += 1
            if uses[index] > 1 and not allow_shared:
                raise TpreproError(f"tuple {position}: {token} is used a second time")
            node.append(copy.deepcopy(built[index]) if uses[index] > 1 else built[index])
        built.append(node)
    unused = [i for i, count in enumerate(uses[:-1]) if count == 0]
    if unused:
        raise TpreproError(f"tuples {unused} are never used")
    return built[-1]


def tree_to_text(tree, arity: int = ARITY) -> str:
    """The command sequence as one string (tprepro.experiments.n2f.tuples.format_program)."""
    return format_program(tree_to_tuples(tree, arity))


def text_to_tree(text: str, arity: int = ARITY, allow_shared: bool = False):
    """Inverse of tree_to_text."""
    return tuples_to_tree(parse_program(text, arity=arity), allow_shared=allow_shared)


def to_sexpr(tree) -> str:
    """Lisp text of a tree, e.g. '(map a (partial1 b -))' (for reading, not parsing)."""
    if isinstance(tree, str):
        return tree
    return "(" + " ".join(to_sexpr(part) for part in tree) + ")"
