"""The `report` stage: results/report.html, every experiment's Reported outputs under their captions."""

from __future__ import annotations

from pathlib import Path

from tprepro.experiments import COMMON, MODEL_CODE, DvcStage, Experiment, Option, Stage, options

REPORT = "results/report.html"
CAPTIONS = "workflow/report"  # the captions, workflow.rst the page's introduction
# Where the experiments' Reported outputs lie (tests/experiments/test_html_report.py checks each one is under one
# of these or LEFT_OUT): the report shows those under these folders and reruns when any of them, or a caption, changes.
REPORTED = ("results/tables", "results/figures", "results/interpret", "mathematics/interpret",
            "two_variable/interpret")
# Not shown: a DVC dependency must exist, and this folder does not when n2f.tasks is empty (snakemake --report has it).
LEFT_OUT = ("n2f/interpret",)


def _report(args) -> None:
    from tprepro.experiments.html_report.stages import report_stage

    report_stage(args.params, Path(args.captions), Path(args.out), REPORTED)


EXPERIMENT = Experiment(
    name="html_report",
    title="The HTML report of every experiment's tables and figures",
    stages=(
        Stage("report", "results/report.html: every experiment's tables and figures, each under its caption",
              options(captions=Option("the captions' folder (workflow.rst: the introduction)").at(CAPTIONS),
                      out="the report page (HTML, written whole)"), _report,
              code=(*COMMON, *MODEL_CODE, "report/__init__.py", "report/html_report.py", "report/html.py",
                    "experiments/__init__.py", "experiments/html_report"),
              params=("grid.models", "grid.seeds", "n2f.tasks", "two_variable.models", "two_variable.seeds"),  # the
              # axes of the jobs whose outputs it shows
              dvc=(DvcStage(f"tprepro report --out {REPORT}", deps=(CAPTIONS, *REPORTED), results=(REPORT,)),)),
    ),
    tracked=False,
)
