"""MLflow tracking: an embedded sqlite store by default, any server via MLFLOW_TRACKING_URI.

The default store is `mlflow.db` (sqlite) with artifacts in `mlartifacts/`, both
in the directory the pipeline runs from and both git-ignored; `mlflow ui
--backend-store-uri sqlite:///mlflow.db` shows them. Parallel jobs share the
store, so creating it and the experiment happens under a file lock.

Each experiment (Mathematics, two-variable, N2F, summarization) has its own MLflow
experiment, `<mlflow.prefix>-<name>`, created with its description, the experiment-type tag
of model training and a project-relative artifact location (`mlartifacts/<id>`, so a moved
project keeps its artifacts; `mlflow ui` is started from the project folder). MLflow 3.17's
UI opens on its GenAI view whatever the tag says, so the run links printed in the logs carry
`?workflowType=machine_learning`, which opens the training view.

Runs of one pipeline invocation are children of one parent run per experiment, found by
the invocation's key (tag `tprepro.invocation`): Snakemake's `onstart:` exports a fresh
key (TPREPRO_INVOCATION, workflow/rules/mlflow.smk), creates the parents and closes them
at the end, deleting those that got no child. Without Snakemake (DVC, a stage by hand)
the key is the process group, a job creates its experiment's parent when it is the first,
and the experiment's tables stage closes it.

With a server, requests give up after a few quick retries (the MLFLOW_HTTP_*
defaults below; the environment overrides them) and a run then falls back to
the local store (see `Run`). Tracking never fails a stage: a server that does
not answer (at Snakemake's start, during or at the end of a stage) means the
local store and one warning; a store that fails otherwise (e.g. a corrupt
mlflow.db) means one warning naming it, and the stage goes on untracked.

The local store is recorded as the project-relative `sqlite:///mlflow.db`
(checkpoints, train_metrics.json), so a copied or moved project keeps writing
into its own store.

One job per module: `store` (URIs, experiments, the local store), `parents` (the invocation's parent
runs), `provenance` (commit, command, log file, SLURM job), `run` (a run and its journal, datasets,
logged models), `links` (where the UI shows a run, and an experiment's training runs flat) and
`callback` (the trainer's callback, the only one that knows the trainer).
"""
