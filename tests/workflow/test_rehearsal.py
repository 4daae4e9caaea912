"""A slice of the paper rehearsal (workflow/configs/rehearsal.yaml: paper.yaml's DAG at small sizes) run
to the end by Snakemake on a copy of the project: the extrapolation module whose generator raises within
its first 500 problems, both splits of Table 1, paper presets narrowed, MathQA on its real files, every other
experiment (summarization on one dataset)."""

import json

import pandas as pd
import pytest

from helpers import REPO, copy_project, release_file, write_params
from pipeline_kit import snakemake
from tprepro.params import load_params

pytestmark = pytest.mark.slow

RAISING = "arithmetic__add_sub_multiple_longer"  # the paper job that always failed (issue 44)


def rehearsal_slice() -> dict:
    """rehearsal.yaml (paper.yaml's presets and DAG, small sizes) on 2 of its modules, MathQA and one summarization
    dataset (each of the four adds the same 7 jobs), fewer steps."""
    params = load_params(REPO / "workflow/configs/rehearsal.yaml")
    params["grid"].update(modules=["arithmetic__add_or_sub", "numbers__place_value"],
                          extrapolation_modules=[RAISING, "numbers__place_value_big"])
    params["interpret"]["module"] = "arithmetic__add_or_sub"
    n2f = params["n2f"]
    n2f.update(tasks=["mathqa"], models=["tp_n2f", "lstm2lstm"])
    n2f["train"].update(steps=4, checkpoint_every=2)
    n2f["mathqa"]["train"]["steps"] = 4
    n2f["mathqa"]["data"].update(train=str(release_file("mathqa/dev.json")), test=str(release_file("mathqa/test.json")))
    summarization = params["summarization"]
    summarization["datasets"] = {"xsum": summarization["datasets"]["xsum"]}
    summarization["train"].update(steps=4, checkpoint_every=2)
    params["two_variable"]["train"].update(steps=10, checkpoint_every=5)
    return params


def test_a_slice_of_the_rehearsal_reaches_table_1_with_both_splits(tmp_path, generate_python):
    root = copy_project(tmp_path / "repo")
    sliced = write_params(root / "slice.yaml", rehearsal_slice())
    assert load_params(sliced)["models"]["tp_transformer"]["preset"] == "tp_transformer_paper"  # paper's, narrowed
    snakemake(root, generate_python, "--config", "params=slice.yaml")
    raising = json.loads((root / "data/mathematics/extrapolate" / RAISING / "manifest.json").read_text())
    assert raising["rows"] == 1000 and sum(raising["generator_errors"]) >= 1  # dropped, redrawn, counted
    modules = pd.read_csv(root / "results/tables/mathematics_modules.csv")
    assert set(modules["split"]) == {"interpolate", "extrapolate", "train"}
    assert set(modules[modules.split == "extrapolate"]["module"]) == {RAISING, "numbers__place_value_big"}
    assert (modules[modules.split != "train"]["n"] == 1000).all()
    table1 = pd.read_csv(root / "results/tables/table1.csv")
    assert set(table1["model"]) == {"transformer", "tp_transformer"} and (table1["steps"] == 40).all()
    mathqa = pd.read_csv(root / "results/tables/mathqa.csv")
    assert len(mathqa) >= 2  # tp_n2f and lstm2lstm rows
