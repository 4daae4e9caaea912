"""The pipeline invocation's key, an environment variable that Snakemake's `onstart` exports
(tprepro.workflow.start_pipeline_run) and every job of that invocation inherits: training requeues
only on preemption within it (train/requeue.py), and MLflow runs find their parent run by it
(tracking/parents.py)."""

INVOCATION_ENV = "TPREPRO_INVOCATION"
