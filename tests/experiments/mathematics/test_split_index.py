"""`tprepro split-index`: one file standing for a split's module directories in later jobs."""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import load_default_params, tool_env, write_params
from tprepro.experiments.mathematics.data_stage import run_data_stage

MODULES = ["arithmetic__add_or_sub", "numbers__place_value"]
EXTRAPOLATION = ["arithmetic__add_or_sub_big"]


def _release(root):
    """A released-format dataset (question and answer lines) for every (split, module) used here."""
    for split, modules in (("train-easy", MODULES), ("extrapolate", EXTRAPOLATION)):
        for module in modules:
            path = root / split / f"{module}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"What is {i} + {len(module)}?\n{i + len(module)}\n" for i in range(7)))


def _import(root, split, module):
    """The data stage, importing `module` of `split` from root/release into root/data."""
    data = {**load_default_params()["data"], "source": "release", "release_root": str(root / "release"),
            "rows_per_shard": 3}
    run_data_stage(split, module, root / "data" / split / module, data)


@pytest.fixture()
def workspace(tmp_path):
    """params.yaml naming MODULES, and data/<split>/<module> imported from a release."""
    params = load_default_params()
    params["grid"].update(modules=MODULES, extrapolation_modules=EXTRAPOLATION)
    write_params(tmp_path / "params.yaml", params)
    _release(tmp_path / "release")
    for split, modules in (("train-easy", MODULES), ("extrapolate", EXTRAPOLATION)):
        for module in modules:
            _import(tmp_path, split, module)
    return tmp_path


def split_index(root, split):
    return subprocess.run(["tprepro", "split-index", "--split", split, "--data", "data", "--out", f"data/{split}.json"],
                          cwd=root, env=tool_env(), capture_output=True, text=True)


def test_the_index_lists_the_grid_modules_of_its_split(workspace):
    for split, modules in (("train-easy", MODULES), ("extrapolate", EXTRAPOLATION)):
        result = split_index(workspace, split)
        assert result.returncode == 0, result.stderr
        index = json.loads((workspace / "data" / f"{split}.json").read_text())
        assert index["split"] == split and sorted(index["modules"]) == sorted(modules)
        assert all(entry["rows"] == 7 and entry["shards"] == 3 for entry in index["modules"].values())
        assert f"{split}: {len(modules)} modules, {7 * len(modules)} problems" in result.stdout


def test_a_module_imported_anew_changes_the_index_and_an_unchanged_one_does_not(workspace):
    assert split_index(workspace, "train-easy").returncode == 0
    first = (workspace / "data" / "train-easy.json").read_bytes()
    assert split_index(workspace, "train-easy").returncode == 0
    assert (workspace / "data" / "train-easy.json").read_bytes() == first
    release = workspace / "release" / "train-easy" / f"{MODULES[0]}.txt"
    release.write_text(release.read_text().replace("What is 0", "What is 10"))
    _import(workspace, "train-easy", MODULES[0])
    assert split_index(workspace, "train-easy").returncode == 0
    assert (workspace / "data" / "train-easy.json").read_bytes() != first


def test_a_missing_module_or_an_unknown_split_is_named_and_nothing_is_written(workspace):
    result = split_index(workspace, "train-medium")
    assert result.returncode != 0
    assert f"data/train-medium/{MODULES[0]}/manifest.json: missing dataset manifest" in result.stderr
    assert not (workspace / "data" / "train-medium.json").exists()
    result = split_index(workspace, "train-extreme")
    assert result.returncode != 0 and "unknown split 'train-extreme'" in result.stderr
