"""Benchmarks of the project's own code: run each from the repository root as `python -m benchmarks.<name>`.

README.md says which write the plan's measurements and which are studies; `benchmarks.kit` is what they share
(the real data sample, each experiment's training set-up, a trainer run with its metrics recorded, settings
overrides, timed jobs, stamped reports, paired intervals).
"""
