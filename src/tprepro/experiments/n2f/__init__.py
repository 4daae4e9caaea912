"""Chen et al. 2020: TP-N2F and its baselines on MathQA (Table 1) and AlgoLisp (Table 2).

Each task is a module `<task>_task.py` here defining TASK (see tasks.py).
"""

VOCAB_FILE = "vocab.json"  # the data stage's vocabulary, beside its train/ and test/ folders
TASKS = ("mathqa", "algolisp")  # the one list of N2F task names (CLI choices, params checks, Snakemake)
