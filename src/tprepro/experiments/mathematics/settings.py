"""The Mathematics experiment's settings rules: the `grid:` modules and models, and the module
the interpretation stages analyse."""

from __future__ import annotations

from tprepro.errors import TpreproError, suggestion
from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, validate_module
from tprepro.params import reraise_with_key


def check_mathematics(params: dict, source: str) -> None:
    grid = params["grid"]
    for module in grid["modules"]:
        reraise_with_key(lambda: validate_module(INTERPOLATE, module), f"{source}: grid.modules")
    for module in grid["extrapolation_modules"]:
        reraise_with_key(lambda: validate_module(EXTRAPOLATE, module), f"{source}: grid.extrapolation_modules")
    for name in grid["models"]:
        if name not in params["models"]:
            raise TpreproError(f"{source}: grid.models: '{name}' has no entry under models"
                               f"{suggestion(name, params['models'])}")
    if params["interpret"]["module"] not in grid["modules"]:
        raise TpreproError(f"{source}: interpret.module: '{params['interpret']['module']}' is not in grid.modules")
