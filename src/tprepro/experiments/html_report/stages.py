"""The report stage: every Reported output of every experiment, its paths filled in under the params."""

from __future__ import annotations

from pathlib import Path

from tprepro.io import atomic_write_text
from tprepro.params import load_params
from tprepro.report.html_report import Reported as Shown
from tprepro.report.html_report import report_page

TITLE = "tprepro: the reproduced tables and figures"


def reported_outputs(params: dict, captions: Path, folders: tuple[str, ...]) -> list[Shown]:
    """Each Reported output under `folders` of every stage's jobs under `params`, in the registry's order: its
    path, caption (captions/<name>.rst), section (its category, else its experiment's) and the job's wildcard
    values; an experiment's own sections first, then those several share (Interpretation)."""
    from tprepro.experiments import Reported, experiments
    from tprepro.params.references import FOREACH, axes_of, job_values, pattern

    own, shared = [], []
    for experiment in experiments().values():
        for dvc in (dvc for stage in experiment.stages for dvc in stage.dvc):
            reported = [path for path in dvc.written if isinstance(path, Reported)
                        and any(path.startswith(f"{folder}/") for folder in folders)]
            for values in job_values(params, axes_of(dvc.matrix, dvc.foreach, dvc.foreach_key)) if reported else ():
                for path in reported:
                    (shared if path.category else own).append(Shown(
                        Path(pattern(path, params, **FOREACH).format(**values)), captions / f"{path.caption}.rst",
                        path.category or experiment.report_category, values))
    return own + shared


def report_stage(params_path: str, captions: Path, out: Path, folders: tuple[str, ...]) -> None:
    params = load_params(params_path)
    outputs = reported_outputs(params, captions, folders)
    atomic_write_text(out, report_page(TITLE, captions / "workflow.rst", outputs))
    missing = [str(output.path) for output in outputs if not output.path.exists()]
    print(f"{len(outputs) - len(missing)} reported outputs -> {out}"
          + (f" ({len(missing)} missing, named as such: {', '.join(missing)})" if missing else ""))
