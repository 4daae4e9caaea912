# One MLflow parent run per Snakemake invocation and experiment; every job's run is a child of
# its experiment's parent (tprepro.workflow.start_pipeline_run exports the invocation's key, by
# which jobs find their parent and training jobs requeue only on preemption).
from tprepro.workflow import end_pipeline_run, start_pipeline_run


onstart:
    start_pipeline_run(P)


onsuccess:
    end_pipeline_run(P)


onerror:
    end_pipeline_run(P, "FAILED")
