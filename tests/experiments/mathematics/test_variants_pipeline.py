"""Every tiny model variant trains and evaluates through the real Snakemake pipeline.

A temporary copy of the project runs the Mathematics Dataset target (`tables`) with one
model per variant, shrunk further and trained for a few steps, and checks the tables and
the discrete-role sharpness metric (file and MLflow).
"""

import json

import pandas as pd
import pytest

from helpers import copy_project, write_params, experiment_name
from pipeline_kit import micro_params, snakemake

pytestmark = pytest.mark.slow

SMALL = dict(d_model=16, n_heads=2, d_ff=32)
VARIANTS = {
    "transformer": dict(preset="transformer_tiny", **SMALL),
    "tp_transformer": dict(preset="tp_transformer_tiny", **SMALL),
    "tpt_d": dict(preset="tpt_d_tiny", **SMALL, d_role=8, n_roles=10),
    "full_tensor": dict(preset="full_tensor_tiny", **SMALL, d_role=4),
    "ut": dict(preset="ut_tiny", **SMALL, ut_steps=2),
    "aut": dict(preset="aut_tiny", **SMALL, act_max_steps=3),
    "lstm": dict(preset="lstm_tiny", d_model=16, lstm_hidden=32),
}


def test_every_variant_through_snakemake(tmp_path, generate_python):
    from mlflow.tracking import MlflowClient

    root = copy_project(tmp_path / "repo")
    params = micro_params()
    params["grid"]["models"] = list(VARIANTS)
    params["models"] = VARIANTS
    params["train"].update(steps=6, checkpoint_every=3, log_every=3)
    write_params(root / "params.yaml", params)

    snakemake(root, generate_python, "tables")

    modules = pd.read_csv(root / "results/tables/mathematics_modules.csv")
    assert set(modules["model"]) == set(VARIANTS)
    evaluation = pd.read_csv(root / "mathematics/eval/aut-s1.csv")
    assert list(evaluation.columns) == ["model", "seed", "module", "split", "n", "correct", "accuracy"]
    table1 = pd.read_csv(root / "results/tables/table1.csv")
    assert set(table1["model"]) == set(VARIANTS)
    parameters = dict(zip(table1["model"], table1["parameters"]))
    assert parameters["ut"] < parameters["transformer"] < parameters["full_tensor"]  # shared vs wider W^(o)

    sharp = sorted(path.name for path in (root / "mathematics/eval").glob("*.roles.json")
                   if json.loads(path.read_text())["role_sharpness"] is not None)
    assert sharp == ["tpt_d-s1.roles.json"]  # only the discrete-role model has role attentions (the others: null)
    sharpness = json.loads((root / "mathematics/eval/tpt_d-s1.roles.json").read_text())
    assert sharpness["model"] == "tpt_d" and sharpness["threshold"] == 0.98
    assert 0.0 <= sharpness["role_sharpness"] <= 1.0 and sharpness["role_distributions"] > 0

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(experiment_name(params))
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert runs["tpt_d-s1"].data.metrics["role_sharpness"] == pytest.approx(sharpness["role_sharpness"])
    for sublayer, layer in sharpness["per_layer"].items():  # enc0.self, ..., dec1.cross
        metric = runs["tpt_d-s1"].data.metrics[f"role_sharpness/{sublayer}"]
        assert metric == pytest.approx(layer["role_sharpness"])
    assert {"enc0.self", "dec0.self", "dec0.cross"} <= set(sharpness["per_layer"])
    assert "role_sharpness" not in runs["transformer-s1"].data.metrics
    # also a training-time metric: logged at every checkpoint (steps 3 and 6), then by evaluation
    history = client.get_metric_history(runs["tpt_d-s1"].info.run_id, "role_sharpness/enc0.self")
    assert {m.step for m in history} == {3, 6} and len(history) == 3
