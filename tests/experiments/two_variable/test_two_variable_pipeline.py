"""The two-variable experiment end to end through Snakemake on a temporary copy (micro settings)."""

import contextlib
import json

import pandas as pd
import pytest

from tprepro.experiments.two_variable.data import TYPES

from helpers import copy_project, experiment_name, load_default_params, micro_n2f, micro_two_variable, write_params
from pipeline_kit import snakemake

pytestmark = pytest.mark.slow
TARGET = "two_variable_tables"


def test_two_variable_table_from_snakemake(tmp_path, generate_python):
    root = copy_project(tmp_path / "repo")
    params = micro_n2f(micro_two_variable(load_default_params()))
    params["two_variable"]["seeds"] = [1, 2]  # a run per model and seed; the table averages them
    write_params(root / "params.yaml", params)
    models = list(params["two_variable"]["models"])
    assert models == ["transformer", "ut", "aut"]

    snakemake(root, generate_python, TARGET)
    table = pd.read_csv(root / "results/tables/two_variable_types.csv")
    assert table["model"].tolist() == models
    assert {"model", "parameters", "steps", "seeds", *TYPES, "overall", "overall_std", "seconds_per_step",
            "train_seconds", "time_vs_first"} <= set(table.columns)
    assert (table["steps"] == 6).all() and table[[*TYPES, "overall"]].apply(lambda c: c.between(0, 1)).all().all()
    assert (table["train_seconds"] > 0).all() and table["time_vs_first"].iloc[0] == 1.0
    assert table["a-a"].notna().all()  # every type has test rows
    assert (table["seeds"] == 2).all() and table["overall_std"].notna().all()
    assert (root / "results/figures/two_variable_learning_curves.png").read_bytes()[:4] == b"\x89PNG"
    curve = pd.read_csv(root / "two_variable/models/ut-s2/learning_curve.csv")
    assert curve["step"].tolist() == [3, 6] and curve["heldout_exact_match"].between(0, 1).all()
    markdown = (root / "results/tables/two_variable_types.md").read_text()
    assert "| model | weights | steps | a+a | a−a | a×a | a+b | a−b | a×b | overall |" in markdown
    assert "(paper 100.00%, Δ" in markdown and "Wangperawong (2018), Table 3" in markdown
    assert json.loads((root / "results/two_variable_metrics.json").read_text())["two_variable"]["overall_acc"].keys() \
        == set(models)
    evals = pd.read_csv(root / "two_variable/eval/ut-s1.csv")
    assert evals["module"].tolist() == list(TYPES) and evals["n"].sum() == 24  # 10% of 240

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(experiment_name(params, "two_variable"))
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert {f"{m}-s{s}" for m in models for s in (1, 2)} <= runs.keys()  # named as in every experiment
    assert "heldout_exact_match" in runs["ut-s2"].data.metrics
    assert "acc.test.a_times_b" in runs["aut-s1"].data.metrics
    tables_run = runs["tables"]
    assert "table.ut.a_plus_b" in tables_run.data.metrics
    with contextlib.chdir(root):  # artifact locations are project-relative
        artifacts = {a.path for a in client.list_artifacts(tables_run.info.run_id, "results")}
    assert {"results/two_variable_types.md", "results/two_variable_types.csv"} <= artifacts

    assert "Nothing to be done" in snakemake(root, generate_python, TARGET, "-n")
    params["two_variable"]["models"]["ut"]["d_ff"] = 24  # one model's setting
    write_params(root / "params.yaml", params)
    plan = snakemake(root, generate_python, TARGET, "-n", "-p")
    assert "--model ut " in plan and "--model transformer " not in plan and "--model aut " not in plan
    assert "two-variable-data" not in plan
