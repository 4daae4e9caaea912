"""The pipeline's HTML report (results/report.html) over every experiment: a stage, not a paper, so it has no MLflow experiment."""
