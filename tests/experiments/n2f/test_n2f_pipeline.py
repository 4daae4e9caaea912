"""The TP-N2F experiments end to end through Snakemake and DVC: MathQA (trained on the real
release's dev split, evaluated on its test split) and AlgoLisp (generated problems), all four
models, the quality reports, both tables and their MLflow runs."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import (copy_project, load_default_params, micro_n2f, micro_two_variable, tool_env,
                     write_params, experiment_name)
from pipeline_kit import misdeclared_params, undeclared_code
from tprepro.params import load_params

pytestmark = pytest.mark.slow
TASKS = ("mathqa", "algolisp")


def run(root, *args, **env) -> str:
    result = subprocess.run([sys.executable, "-m", *args], cwd=root, env=tool_env(**env), capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout + result.stderr


def n2f_project(root):
    copy_project(root)
    params = micro_n2f(micro_two_variable(load_default_params()), TASKS)
    write_params(root / "params.yaml", params)
    return params


def check_tables(root, params, tasks=TASKS) -> None:
    models = params["n2f"]["models"]
    frames = []
    if "mathqa" in tasks:
        mathqa = pd.read_csv(root / "results/tables/mathqa.csv")
        assert list(mathqa["model"]) == models and (mathqa["steps"] == 4).all()
        assert {"test.operation", "test.execution"} <= set(mathqa.columns)
        markdown = (root / "results/tables/mathqa.md").read_text()
        assert "trained on `dev`" in markdown and "evaluated on `test`" in markdown
        evaluation = pd.read_csv(root / "n2f/eval/mathqa/tp_n2f-s1.csv")
        assert (evaluation["n"] == 2985).all()  # the whole real test split
        quality = json.loads((root / "results/n2f/mathqa_quality.json").read_text())
        assert quality["train"]["label"] == "dev" and quality["train"]["examples"] == 4475
        assert 0.3 < quality["test"]["gold_execution_rate"] < 1.0
        frames.append(mathqa)
    if "algolisp" in tasks:
        algolisp = pd.read_csv(root / "results/tables/algolisp.csv")
        assert list(algolisp["model"]) == models
        assert {f"{s}.{m}" for s in ("generated-test", "generated-test-cleaned")
                for m in ("acc", "acc_50p", "m_acc")} <= set(algolisp.columns)
        frames.append(algolisp)
    for frame in frames:
        accuracies = frame[[c for c in frame.columns if "." in c and not c.endswith(("_std", "_paired", "_paired_low",
                                                                                    "_paired_high"))]]
        assert ((accuracies >= 0) & (accuracies <= 1)).all().all() and (frame["seeds"] == 1).all()
        intervals = frame[[c for c in frame.columns if c.endswith(("_paired_low", "_paired_high"))]]
        assert not intervals.empty and intervals.isna().all().all()  # model − the first: one seed, no interval
    for task in tasks:  # the DVC metrics: each model's headline (the table's first column) and final training loss
        metrics = json.loads((root / f"results/{task}_metrics.json").read_text())[task]
        losses = metrics.pop("train_loss")
        ((_, headline),) = metrics.items()
        assert list(headline) == sorted(models) and all(0 <= value <= 1 for value in headline.values())
        assert list(losses) == sorted(models) and all(value > 0 for value in losses.values())


def check_mlflow(root, params) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(experiment_name(params, "n2f"))
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    for task in TASKS:
        assert {f"{task}/quality", f"{task}/tables"} <= runs.keys()
        for model in params["n2f"]["models"]:
            run = runs[f"{task}/{model}-s1"]
            assert run.data.params["model.arch"] == model
            assert "loss" in run.data.metrics
    assert any(key.startswith("acc.test.operation") for key in runs["mathqa/tp_n2f-s1"].data.metrics)


def test_n2f_pipeline_through_snakemake(tmp_path, generate_python):
    root = tmp_path / "repo"
    params = n2f_project(root)
    targets = [f"results/tables/{task}.md" for task in TASKS]
    audit = tmp_path / "audit.jsonl"  # what each command ran and read (tprepro.audit)
    run(root, "snakemake", "--cores", "2", *targets, TPREPRO_AUDIT_LOG=str(audit))
    check_tables(root, params)
    check_mlflow(root, params)
    assert undeclared_code(audit) == {}  # each stage's Stage.code covers the code it ran
    assert misdeclared_params(audit, load_params(root / "params.yaml")) == {}  # its params, the keys it read
    assert "Nothing to be done" in run(root, "snakemake", "--cores", "2", "-n", *targets)
    # the shared train.steps is not N2F's (n2f.train sets its own); n2f.train.steps reruns N2F alone (issue 45)
    assert "Nothing to be done" in run(root, "snakemake", "--cores", "2", "-n", *targets,
                                       "--config", "train={steps: 60}")  # --config takes every word after it
    planned = run(root, "snakemake", "--cores", "2", "-n", *targets, "--config", "n2f={train: {steps: 5}}")
    assert "n2f_train" in planned and not {"train", "two_variable_train", "summarization_train"} & set(
        re.findall(r"^rule (\w+):", planned, flags=re.M))

    params["n2f"]["algolisp"]["models"]["lstm2tp"]["d_argument"] = 4  # one model of one task
    write_params(root / "params.yaml", params)
    plan = run(root, "snakemake", "--cores", "2", "-n", *targets)
    assert "n2f_train" in plan and "wildcards: task=algolisp, model=lstm2tp, seed=1" in plan
    assert "model=tp_n2f" not in plan and "task=mathqa" not in plan


def test_n2f_pipeline_through_dvc(tmp_path, generate_python):
    """AlgoLisp's stages through `dvc repro`. MathQA's DVC stages run the same commands with other
    arguments (tests/workflow/test_dag_equality.py keeps both tasks' commands and outputs equal to the
    Snakemake DAG's), and MathQA runs end to end through Snakemake above."""
    root = tmp_path / "repo"
    params = n2f_project(root)
    params["n2f"]["models"] = ["tp_n2f", "lstm2lstm"]  # a TP model and a baseline: the others' commands are alike
    write_params(root / "params.yaml", params)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    run(root, "dvc", "repro", "n2f_tables@algolisp")
    check_tables(root, params, ("algolisp",))
    assert "up to date" in run(root, "dvc", "status", "n2f_tables@algolisp").lower()
