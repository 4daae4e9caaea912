"""The data files of the experiments' DVC plots over all runs (.dvc/plots/model_curves.json,
model_bars.json): long tables with each row's model colour, the matplotlib figures' palette."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd
from matplotlib.colors import to_hex

from tprepro.figures import model_colours
from tprepro.report.tables import write_csv

CURVE_COLUMNS = ["model", "seed", "step", "heldout_loss", "heldout_exact_match", "colour"]


def with_colours(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a `colour` column: its model's colour in every figure (figures.model_colours)."""
    colours = {model: to_hex(colour) for model, colour in model_colours(frame["model"]).items()}
    return frame.assign(colour=frame["model"].map(colours))


def curve_rows(curves: Mapping[tuple[str, int], pd.DataFrame]) -> pd.DataFrame:
    """Every run's learning curve ({(model, seed): curve}) as one table, a row per checkpoint."""
    frames = [curve.assign(model=model, seed=seed) for (model, seed), curve in curves.items()]
    return with_colours(pd.concat(frames, ignore_index=True))[CURVE_COLUMNS]


def write_curves(curves: Mapping[tuple[str, int], pd.DataFrame], path: Path) -> None:
    write_csv(curve_rows(curves), path)


def write_bars(scores: pd.DataFrame, path: Path) -> None:
    """Scores per model, module (or measure) and split (report.tables.module_table's columns), coloured."""
    write_csv(with_colours(scores), path)
