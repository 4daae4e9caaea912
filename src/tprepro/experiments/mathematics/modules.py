"""Split and module names of the DeepMind Mathematics Dataset (mathematics_dataset 1.0.1).

Hard-coded so that importing this needs no mathematics_dataset; a test run in the
generation environment checks the lists against the package's own.
"""

from __future__ import annotations

from typing import Mapping

from tprepro.errors import TpreproError, suggestion

TRAIN_SPLITS = ("train-easy", "train-medium", "train-hard")
INTERPOLATE = "interpolate"
EXTRAPOLATE = "extrapolate"
SPLITS = (*TRAIN_SPLITS, INTERPOLATE, EXTRAPOLATE)

# Modules of every train-* split and of interpolate (the package's sorted names).
TRAIN_MODULES = (
    "algebra__linear_1d",
    "algebra__linear_1d_composed",
    "algebra__linear_2d",
    "algebra__linear_2d_composed",
    "algebra__polynomial_roots",
    "algebra__polynomial_roots_composed",
    "algebra__sequence_next_term",
    "algebra__sequence_nth_term",
    "arithmetic__add_or_sub",
    "arithmetic__add_or_sub_in_base",
    "arithmetic__add_sub_multiple",
    "arithmetic__div",
    "arithmetic__mixed",
    "arithmetic__mul",
    "arithmetic__mul_div_multiple",
    "arithmetic__nearest_integer_root",
    "arithmetic__simplify_surd",
    "calculus__differentiate",
    "calculus__differentiate_composed",
    "comparison__closest",
    "comparison__closest_composed",
    "comparison__kth_biggest",
    "comparison__kth_biggest_composed",
    "comparison__pair",
    "comparison__pair_composed",
    "comparison__sort",
    "comparison__sort_composed",
    "measurement__conversion",
    "measurement__time",
    "numbers__base_conversion",
    "numbers__div_remainder",
    "numbers__div_remainder_composed",
    "numbers__gcd",
    "numbers__gcd_composed",
    "numbers__is_factor",
    "numbers__is_factor_composed",
    "numbers__is_prime",
    "numbers__is_prime_composed",
    "numbers__lcm",
    "numbers__lcm_composed",
    "numbers__list_prime_factors",
    "numbers__list_prime_factors_composed",
    "numbers__place_value",
    "numbers__place_value_composed",
    "numbers__round_number",
    "numbers__round_number_composed",
    "polynomials__add",
    "polynomials__coefficient_named",
    "polynomials__collect",
    "polynomials__compose",
    "polynomials__evaluate",
    "polynomials__evaluate_composed",
    "polynomials__expand",
    "polynomials__simplify_power",
    "probability__swr_p_level_set",
    "probability__swr_p_sequence",
)
INTERPOLATE_MODULES = TRAIN_MODULES

EXTRAPOLATE_MODULES = (
    "algebra__polynomial_roots_big",
    "arithmetic__add_or_sub_big",
    "arithmetic__add_sub_multiple_longer",
    "arithmetic__div_big",
    "arithmetic__mixed_longer",
    "arithmetic__mul_big",
    "arithmetic__mul_div_multiple_longer",
    "comparison__closest_more",
    "comparison__kth_biggest_more",
    "comparison__sort_more",
    "measurement__conversion",
    "numbers__place_value_big",
    "numbers__round_number_big",
    "probability__swr_p_level_set_more_samples",
    "probability__swr_p_sequence_more_samples",
)

_DIFFICULTY = {
    "train-easy": "easy",
    "train-medium": "medium",
    "train-hard": "hard",
    INTERPOLATE: INTERPOLATE,
    EXTRAPOLATE: EXTRAPOLATE,
}


def _check_split(split: str) -> None:
    if split not in _DIFFICULTY:
        raise TpreproError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")


def modules_for(split: str) -> tuple[str, ...]:
    """The module names available in `split`."""
    _check_split(split)
    return EXTRAPOLATE_MODULES if split == EXTRAPOLATE else TRAIN_MODULES


def split_modules(grid: Mapping, split: str) -> list[str]:
    """The modules params `grid:` trains or tests on in `split`."""
    _check_split(split)
    return list(grid["extrapolation_modules"] if split == EXTRAPOLATE else grid["modules"])


def difficulty_of(split: str) -> str:
    """The `difficulty` column value for rows of `split`."""
    _check_split(split)
    return _DIFFICULTY[split]


def validate_module(split: str, module: str) -> None:
    """Raise TpreproError unless `module` exists in `split`."""
    known = modules_for(split)
    if module not in known:
        raise TpreproError(f"unknown module {module!r} for split {split!r}{suggestion(module, known)} "
                           f"(known: {', '.join(known)})")
