"""The rerun oracle's finished micro project, for test_reruns_*.py (built once per session: rerun_oracle.py)."""

from rerun_oracle import finished  # noqa: F401  (a fixture)
