# One MLflow parent run per Snakemake invocation; every job's run is its child
# (tprepro.workflow.start_pipeline_run exports its id, and the invocation's id that lets
# training jobs requeue only on preemption, to the jobs).
from tprepro.workflow import end_pipeline_run, start_pipeline_run


onstart:
    start_pipeline_run(P["mlflow"]["experiment"])


onsuccess:
    end_pipeline_run(P["mlflow"]["experiment"])


onerror:
    end_pipeline_run(P["mlflow"]["experiment"], "FAILED")
