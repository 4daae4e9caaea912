"""The files an evaluation writes beside its CSV, named once for the stage declarations, the writers and the
readers."""

from pathlib import Path

ROLES_SUFFIX = ".roles.json"  # a run's role sharpness (null for a model without discrete roles)


def role_sharpness_path(evaluation: str | Path) -> Path:
    """Where write_role_sharpness puts a run's role sharpness: beside its evaluation CSV."""
    return Path(evaluation).with_suffix(ROLES_SUFFIX)
