"""AlgoLisp (Polosukhin & Skidanov 2018) for the TP-N2F reproduction (paper Sec. 4.2, App. A.1/A.4).

- `release`: metaset3 JSONL records -> rows (question, command-sequence answer, raw fields) and parquet.
- `program`: program tree <-> straight-line tuple sequence with `#i` references (arity 3).
- `interpreter`: a bounded, sandboxed interpreter of the AlgoLisp DSL.
- `generator`: synthetic AlgoLisp-format problems from templates (tests computed by the interpreter).
- `metrics`: Acc / 50p-Acc / M-Acc on full and cleaned test sets.
"""
