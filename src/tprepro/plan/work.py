"""What one job of a stage does under a params file: its Stage's declaration (tprepro.work has the type)."""

from __future__ import annotations

from tprepro.work import Work


def work(params: dict, stage: str, item: dict) -> Work:
    """What one job of `stage` with matrix values `item` does under `params` (its Stage declares it)."""
    from tprepro.experiments import stage as registered

    return registered(stage).work(params, item)
