"""`tprepro compare`: DVC experiments side by side, one column per experiment and one row per headline
metric and per setting that differs between them, so that ten runs fit a terminal (`dvc exp show` puts
each of the 20-odd headlines and every setting in a column of its own: 300 columns wide).

The numbers are DVC's (`dvc.api.exp_show`: the workspace, the commit and its experiments); a setting is a
key of params.yaml, a column named by a path a dependency's hash (not shown), every other column a metric
of the metrics files dvc.yaml names ("!": none in that revision).
"""

from __future__ import annotations

from pathlib import Path

from tprepro.errors import TpreproError

# exp_show's columns that describe a row rather than measure it
ROW_FIELDS = ("Experiment", "rev", "typ", "Created", "parent", "State", "Executor")
ABSENT = "-"


def settings_keys(node: dict, prefix: str = "") -> set[str]:
    """Every dotted key of a params file (a mapping's own key too)."""
    keys = set()
    for key, value in node.items():
        keys.add(f"{prefix}{key}")
        if isinstance(value, dict):
            keys |= settings_keys(value, f"{prefix}{key}.")
    return keys


def label(row: dict) -> str:
    """A row's name: its experiment's, else its revision (workspace, a branch, a commit)."""
    return row.get("Experiment") or row["rev"]


def shown(value) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def comparison(rows: list[dict], settings: set[str], only: list[str] | None = None) -> list[list[str]]:
    """The table as lines of cells: a header (the experiments), then each metric, then each setting whose
    values differ between the experiments shown (`only`: those named, in that order)."""
    if only:
        by_name = {label(row): row for row in rows}
        missing = [name for name in only if name not in by_name]
        if missing:
            raise TpreproError(f"no experiment or revision {', '.join(map(repr, missing))} in `dvc exp show` "
                               f"(there: {', '.join(by_name)})")
        rows = [by_name[name] for name in only]
    keys = list(dict.fromkeys(key for row in rows for key in row
                              if key not in ROW_FIELDS and "/" not in key))  # not a dependency's hash (a path)
    metrics = sorted(key for key in keys if key not in settings)
    differing = [key for key in keys if key in settings and len({shown(row.get(key)) for row in rows}) > 1]
    return [["", *map(label, rows)], *([key, *(shown(row.get(key)) for row in rows)] for key in metrics),
            *([key, *(shown(row.get(key)) for row in rows)] for key in differing)]


def render(lines: list[list[str]]) -> str:
    """Cells in aligned columns: the first left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join("  ".join([line[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in
                                                            zip(line[1:], widths[1:]))]).rstrip() for line in lines)


def compare(repo: Path, only: list[str] | None = None, num: int = 1) -> str:
    """The comparison of the experiments of the last `num` commits of `repo` (a DVC project in git)."""
    import dvc.api
    import yaml

    try:
        rows = dvc.api.exp_show(repo=str(repo), num=num)
    except Exception as exc:  # DVC's own errors: not a git or DVC repository, a broken dvc.yaml
        raise TpreproError(f"{repo}: `dvc exp show` failed ({type(exc).__name__}: {exc}); run it from the project "
                           "folder, a git repository with a commit (README: Comparing runs)") from exc
    settings = settings_keys(yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8")) or {})
    return render(comparison(rows, settings, only))
