"""Chen et al. 2020: TP-N2F and its baselines on MathQA (Table 1) and AlgoLisp (Table 2).

Each task is a module `<task>_task.py` here defining TASK (see tasks.py).
"""

TASKS = ("mathqa", "algolisp")  # the one list of N2F task names (CLI choices, params checks, Snakemake)
