"""Benchmarks of the project's own code: run each from the repository root as `python -m benchmarks.<name>`.

`benchmarks.kit` is what they share (the real data sample, a trainer run with its metrics recorded, settings
overrides, stamped reports, paired intervals); each experiment's training set-up is `benchmarks.setups`'.
"""
