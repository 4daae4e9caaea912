"""The two-variable arithmetic data (Wangperawong 2018), its settings and its table."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tprepro.cli import main
from tprepro.params import load_params, validate_params
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.experiments.two_variable.data import SPACE, TYPES, decode, permute, problems, write_two_variable
from tprepro.errors import TpreproError
from tprepro.experiments.two_variable.table import type_table, type_table_markdown
from tprepro.report.published import published

from helpers import REPO, load_default_params, write_params

SETTINGS = {"seed": 3, "size": 600, "test_fraction": 0.1, "rows_per_shard": 200}
QUESTION = re.compile(r"^([xy]) = (-?\d+), ([xy]) = (-?\d+), ([xy])([-+*])([xy])$")
WRITE = "import sys, json; from tprepro.experiments.two_variable.data import write_two_variable as w; w(sys.argv[1], **json.loads(sys.argv[2]))"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("two_variable")
    write_two_variable(out, **SETTINGS)
    return {split: list(iter_rows(open_dataset(out / split, verify=True), ("question", "answer", "module", "split")))
            for split in ("train", "test")}


def _files(directory):
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_identical_bytes_across_processes_and_hash_seeds(tmp_path):
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / hash_seed), json.dumps(SETTINGS)],
                       env=env, check=True, timeout=120)
    assert _files(tmp_path / "1") == _files(tmp_path / "2")
    assert len(_files(tmp_path / "1")) == 6  # train: 3 shards + manifest; test: 1 shard + manifest


def test_a_row_depends_only_on_seed_and_position():
    whole = problems(np.arange(0, 40), seed=3, split="train")
    assert problems(np.arange(25, 32), seed=3, split="train") == whole[25:32]
    assert problems(np.arange(0, 40), seed=4, split="train") != whole


def test_split_sizes_shards_and_manifest(tmp_path):
    dirs = write_two_variable(tmp_path, **SETTINGS)
    train, test = open_dataset(dirs["train"], verify=True), open_dataset(dirs["test"], verify=True)
    assert (train.rows, test.rows) == (540, 60)
    assert [s["rows"] for s in train.manifest["shards"]] == [200, 200, 140]
    assert {k: test.manifest[k] for k in ("split", "seed", "size", "source")} == {
        "split": "test", "seed": 3, "size": 600, "source": "two_variable"}


def test_answers_and_type_labels_recomputed(dataset):
    for split, rows in dataset.items():
        for row in rows:
            first, a, second, b, left, op, right = QUESTION.match(row["question"]).groups()
            assert {first, second} == {"x", "y"} and row["split"] == split
            values = {first: int(a), second: int(b)}
            assert all(-1000 <= v <= 1000 for v in values.values())
            expected = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q}[op]
            assert row["answer"] == str(expected(values[left], values[right]))
            assert row["module"] == f"a{op}{'a' if left == right else 'b'}"


def test_order_both_ways_all_types_all_expressions_and_no_repeats(dataset):
    rows = dataset["train"] + dataset["test"]
    assert {r["question"][0] for r in rows} == {"x", "y"}
    assert {r["module"] for r in dataset["test"]} == set(TYPES)
    assert {r["question"].rsplit(", ", 1)[1] for r in rows} == {
        f"{p}{op}{q}" for p in "xy" for q in "xy" for op in "+-*"}
    questions = [r["question"] for r in rows]
    assert len(set(questions)) == len(questions)  # train and test disjoint, no duplicates


def test_permutation_stays_in_range_and_decodes_the_extremes():
    numbers = permute(np.arange(0, 50_000), seed=1)
    assert numbers.min() >= 0 and numbers.max() < SPACE and len(np.unique(numbers)) == 50_000
    x, y, y_first, expression = decode(np.array([0, SPACE - 1]))
    assert x.tolist() == [-1000, 1000] and y.tolist() == [-1000, 1000]
    assert y_first.tolist() == [False, True] and expression.tolist() == [0, 11]


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda s: s["data"].update(size=SPACE + 1), "two_variable.data.size"),
        (lambda s: s["data"].update(test_fraction=1.0), "two_variable.data.test_fraction"),
        (lambda s: s["data"].update(size=5, test_fraction=0.01), "two_variable.data.test_fraction"),
        (lambda s: s["data"].update(sead=1), "two_variable.data.sead"),
        (lambda s: s["train"].update(stepz=3), "two_variable.train.stepz"),
        (lambda s: s["train"].update(steps="many"), "two_variable.train.steps"),
        (lambda s: s["models"]["transformer"].pop("preset"), "two_variable.models.transformer.preset"),
        (lambda s: s.pop("seeds"), "two_variable.seeds"),
        (lambda s: s.update(seeds=[1, 1]), "two_variable.seeds"),
    ],
)
def test_bad_settings_name_the_key(edit, key):
    params = copy.deepcopy(load_default_params())
    edit(params["two_variable"])
    with pytest.raises(TpreproError, match=re.escape(key)):
        validate_params(params, "params.yaml")


def test_bad_model_override_names_the_key(tmp_path, capsys):
    params = load_default_params()
    params["two_variable"]["models"]["transformer"]["d_modle"] = 32
    assert main(["validate", "--params", str(write_params(tmp_path / "params.yaml", params))]) == 2
    assert "two_variable.models.transformer.d_modle" in capsys.readouterr().err


def test_table_has_a_column_per_type_and_time_relative_to_the_first_model():
    evals = pd.DataFrame(
        [{"model": m, "seed": 1, "module": t, "split": "test", "n": 10, "correct": c, "accuracy": c / 10}
         for m, correct in (("transformer", 10), ("ut", 5)) for t, c in zip(TYPES, [correct, 0, 10, 10, 10, 10])])
    training = {"transformer": {"parameters": 1000, "steps": 6, "wall_seconds": 2.0, "resumed_from": None},
                "ut": {"parameters": 900, "steps": 6, "wall_seconds": 3.5, "resumed_from": 3}}  # 3 steps timed
    table = type_table(evals, training)
    assert {"model", "parameters", "steps", "seeds", *TYPES, "overall", "overall_std", "seconds_per_step",
            "train_seconds", "time_vs_first"} <= set(table.columns)
    ut = table.set_index("model").loc["ut"]
    assert (ut["a+a"], ut["a-a"], ut["overall"], ut["train_seconds"]) == (0.5, 0.0, 45 / 60, 7.0)
    assert ut["time_vs_first"] == pytest.approx(3.5)  # 3.5/3 s per step against 2/6
    papers = {"transformer": published("two_variable").row_for("transformer"), "ut": None}
    markdown = type_table_markdown(table, papers, budget="6 steps of batch 2")
    assert "| ut | 0.00M | 6 | 50.00% | 0.00% | 100.00% |" in markdown  # one seed: no ±; no paper row
    assert "| transformer | 0.00M | 6 | 100.00% (paper 100.00%, Δ +0.00) | 0.00% (paper 100.00%, Δ -100.00) |" \
        in markdown
    assert "1 seed per model; ours: 6 steps of batch 2" in markdown and "Wangperawong (2018), Table 3" in markdown
    with pytest.raises(TpreproError, match=r"ut \(seed 1\): no rows for expression types \['a\*b'\]"):
        type_table(evals[~((evals.model == "ut") & (evals.module == "a*b"))], training)


def test_paper_overlay_has_the_papers_two_variable_settings():
    section = load_params(REPO / "workflow/configs/paper.yaml")["two_variable"]
    assert (section["data"]["size"], section["data"]["test_fraction"]) == (12_000_000, 0.1)
    assert {name: m["preset"] for name, m in section["models"].items()} == {
        "transformer": "wangperawong_transformer", "ut": "wangperawong_ut", "aut": "wangperawong_aut"}
    assert section["train"]["steps"] == 100_000


def test_table_columns_become_valid_mlflow_metric_names():
    from mlflow.utils.validation import _validate_metric_name

    from tprepro.experiments.two_variable.data import metric_name

    for column in (*TYPES, "overall", *(f"{t}_std" for t in TYPES), "seeds", "time_vs_first"):
        _validate_metric_name(metric_name(column))  # raises on "+" or "*"
    assert metric_name("a*b_std") == "a_times_b_std" and metric_name("overall") == "overall"
