"""Where a user finds runs in the MLflow UI: a run's page, and an experiment's training runs listed flat,
which is where README's comparison starts (tick two runs, Compare).

MLflow 3.17 opens on its GenAI view unless the address asks for the training view (`workflowType`), and
folds child runs under their `pipeline` parent while the runs are sorted by creation time; sorted by
run name and filtered to the training runs (tag `stage` = train), they are listed flat, each name in full.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

TRAINING_VIEW = {"workflowType": "machine_learning"}
TRAINING_RUNS = {**TRAINING_VIEW, "searchFilter": "tags.stage = 'train'", "orderByKey": "tags.`mlflow.runName`",
                 "orderByAsc": "true"}


def run_page(experiment_id: str, run_id: str) -> str:
    """A run's page, as a fragment of the UI's address."""
    return f"#/experiments/{experiment_id}/runs/{run_id}?{urlencode(TRAINING_VIEW)}"


def training_runs_page(experiment_id: str) -> str:
    """An experiment's training runs, flat and by name, as a fragment of the UI's address."""
    return f"#/experiments/{experiment_id}/runs?{urlencode(TRAINING_RUNS)}"


def ui_links(names: list[str], uri: str, ui: str) -> list[str]:
    """One line per experiment of `names` the store `uri` holds: its name and the address of its training
    runs in the UI at `ui` (a server's own address when `uri` is a server). None created; for a local store
    that does not exist yet, a line saying so."""
    from mlflow.tracking import MlflowClient

    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        return [f"no MLflow store yet ({uri[len('sqlite:///'):]}): run the pipeline first"]
    base = (uri if uri.startswith("http") else ui).rstrip("/")
    client = MlflowClient(tracking_uri=uri)
    found = [(name, client.get_experiment_by_name(name)) for name in names]
    return [f"{name}: {base}/{training_runs_page(experiment.experiment_id)}" for name, experiment in found
            if experiment is not None] or [f"no tprepro experiment in {uri} yet: run the pipeline first"]
