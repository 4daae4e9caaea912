# tprepro: the Mathematics Dataset pipeline (TP-Transformer vs Transformer).
# Also the two-variable arithmetic experiment (UT / AUT vs Transformer) and the
# TP-N2F experiments (MathQA, AlgoLisp) and the summarization experiment.
# Settings: params.yaml (validated before anything runs). The same stages are
# DVC stages in dvc.yaml; tests/workflow/test_dag_equality.py keeps the two equal.
from snakemake.utils import min_version

min_version("9.0")

report: "workflow/report/workflow.rst"  # `snakemake --report`; the report stage writes results/report.html


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/two_variable.smk"
include: "workflow/rules/n2f.smk"
include: "workflow/rules/summarization.smk"
include: "workflow/rules/interpret.smk"
include: "workflow/rules/html_report.smk"
include: "workflow/rules/mlflow.smk"


rule all:
    input:  # one output of every job no other job reads (the report page, which reads the tables and figures)
        final_outputs(P),
