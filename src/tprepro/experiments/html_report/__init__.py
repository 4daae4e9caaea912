"""The pipeline's HTML report (results/report.html) over every experiment: a stage, not a paper, so
without an MLflow experiment."""
