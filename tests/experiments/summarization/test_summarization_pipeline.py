"""End to end: the summarization experiment's Snakemake target on micro settings, with all four
datasets (one per release format, all read from the CI corpus), MLflow runs and a re-plan."""

import json

import pandas as pd
import pytest

from helpers import copy_project, load_default_params, micro_summarization, write_params, experiment_name
from pipeline_kit import snakemake

pytestmark = pytest.mark.slow
TARGET = "summarization_tables"


def test_summarization_table_from_snakemake(tmp_path, generate_python):
    root = copy_project(tmp_path / "repo")
    params = micro_summarization(load_default_params(), ("xsum", "cnndm", "wikihow", "arxiv"))
    write_params(root / "params.yaml", params)

    snakemake(root, generate_python, TARGET)
    table = pd.read_csv(root / "results/tables/summarization.csv")
    assert table["model"].tolist() == ["transformer", "tpt_d"]
    for dataset in ("xsum", "cnndm", "wikihow", "arxiv"):
        for name in ("rouge1", "rouge2", "rougeL"):
            assert table[f"{dataset}.{name}"].between(0, 100).all()
            assert (table[f"{dataset}.{name}_low"] <= table[f"{dataset}.{name}_high"]).all()
        assert (table[f"{dataset}.n"] == 4).all()
        assert table[f"{dataset}.role_sharpness"].isna().tolist() == [True, False]
        assert (root / f"data/summarization/{dataset}/spm.model").is_file()
    markdown = (root / "results/tables/summarization.md").read_text()
    assert "| model | xsum R-1 | xsum R-2 | xsum R-L | cnndm R-1 |" in markdown
    assert "## Role one-hotness" in markdown and "- reference: " in markdown
    headlines = json.loads((root / "results/summarization_metrics.json").read_text())["summarization"]
    assert {model for by_model in headlines.values() for model in by_model} == {"transformer", "tpt_d"}
    assert all(metric.endswith(".rougeL") for metric in headlines)
    evaluation = pd.read_csv(root / "summarization/eval/arxiv/tpt_d-s1.csv")
    assert evaluation[["model", "seed", "split", "n"]].drop_duplicates().values.tolist() == [["tpt_d", 1, "test", 4]]
    assert evaluation["module"].tolist() == ["rouge1", "rouge2", "rougeL"]
    assert evaluation["accuracy"].between(0, 1).all()
    documents = pd.read_csv(root / "summarization/eval/arxiv/tpt_d-s1.documents.csv", keep_default_na=False)
    assert len(documents) == 4 and documents["rougeL"].mean() == pytest.approx(evaluation["accuracy"].iloc[2], abs=1e-6)
    roles = json.loads((root / "summarization/eval/arxiv/tpt_d-s1.roles.json").read_text())
    assert 0 <= roles["role_sharpness"] <= 1
    assert table["arxiv.role_sharpness"].iloc[1] == pytest.approx(roles["role_sharpness"], abs=1e-6)
    assert json.loads((root / "summarization/eval/arxiv/transformer-s1.roles.json").read_text())["role_sharpness"] is None

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(experiment_name(params, "summarization"))
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    expected_runs = {"xsum/tpt_d-s1", "wikihow/transformer-s1", "tables"}  # <dataset>/<run>, as N2F's <task>/<run>
    assert expected_runs <= runs.keys()
    assert "cnndm.rouge1" in runs["cnndm/tpt_d-s1"].data.metrics
    assert runs["cnndm/tpt_d-s1"].data.params["train.optimizer"] == "adafactor"

    assert "Nothing to be done" in snakemake(root, generate_python, TARGET, "-n")
    params["summarization"]["models"]["tpt_d"]["d_ff"] = 24  # one model's setting
    write_params(root / "params.yaml", params)
    plan = snakemake(root, generate_python, TARGET, "-n", "-p")
    assert "--model tpt_d" in plan and "--model transformer" not in plan and "summarization-data" not in plan
