"""Symbols as the analyses' figures show them (drawing and saving: tprepro.figures)."""

from __future__ import annotations

SHOWN = {" ": "␣", "<s>": "#", "</s>": "%"}  # start / end as the paper's figures write them


def shown(symbol: str) -> str:
    """A symbol as figures draw it: a visible space, '#' / '%' for start / end of sequence."""
    return SHOWN.get(symbol, symbol)


