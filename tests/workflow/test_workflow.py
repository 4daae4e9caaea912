"""tprepro.workflow: one code-digest input file per stage that changes exactly when the stage's code
does; the rules' params values and shell commands, taken from the stage declarations."""

import os
import shutil
import time

from helpers import REPO, load_default_params
from tprepro.experiments import code_files
from tprepro.workflow import code_digest, stage_shell


def test_the_digest_changes_with_the_code_and_only_then(tmp_path):
    root = tmp_path / "tprepro"
    shutil.copytree(REPO / "src" / "tprepro", root, ignore=shutil.ignore_patterns("__pycache__"))
    folder = tmp_path / "digests"
    sources = code_files("vocab", str(root))

    digest = code_digest("vocab", str(root), folder)  # missing: the newest source file's mtime
    newest = max(os.stat(path).st_mtime_ns for path in sources)
    assert os.stat(digest).st_mtime_ns == newest
    listing = open(digest, encoding="utf-8").read().splitlines()
    assert [line.split("  ", 1)[1] for line in listing] == sources

    old = time.time() - 600
    os.utime(digest, (old, old))
    os.utime(sources[0])  # touched, not edited: nothing changes
    assert code_digest("vocab", str(root), folder) == digest and os.stat(digest).st_mtime == old

    with open(sources[-1], "a", encoding="utf-8") as handle:
        handle.write("# an edit\n")
    code_digest("vocab", str(root), folder)
    assert os.stat(digest).st_mtime > old + 300  # rewritten now: the stage's outputs are older
    assert open(digest, encoding="utf-8").read().splitlines() != listing

    os.remove(digest)  # a deleted .snakemake: recreated without making outputs look stale
    code_digest("vocab", str(root), folder)
    assert os.stat(digest).st_mtime_ns == max(os.stat(path).st_mtime_ns for path in sources)


def test_settings_give_a_rule_the_values_of_its_stage_params_keys():
    import pytest
    from snakemake.iocontainers import Wildcards

    from tprepro.errors import TpreproError
    from tprepro.workflow import settings

    params = {"n2f": {"algolisp": {"models": {"tp_n2f": {"d": 8}}, "train": {"steps": 3}}, "train": {"lr": 1}},
              "train": {"steps": 9, "lr": 2}}
    entries = settings("n2f-train", params)
    assert list(entries) == ["n2f_task_models_model", "n2f_task_train", "n2f_train", "train"]
    assert entries["n2f_train"] == {"lr": 1} and entries["train"] == params["train"]
    job = Wildcards(fromdict={"task": "algolisp", "model": "tp_n2f", "seed": "1"})
    assert entries["n2f_task_models_model"](job) == {"d": 8}
    assert entries["n2f_task_train"](job) == {"steps": 3}
    with pytest.raises(TpreproError, match="n2f.mathqa.train"):
        entries["n2f_task_train"](Wildcards(fromdict={"task": "mathqa", "model": "tp_n2f"}))


def test_a_rules_shell_command_is_its_stages_dvc_command_in_snakemake_terms():
    params = load_default_params()
    assert stage_shell("n2f-train", params) == (
        "tprepro n2f-train --task {wildcards.task} --model {wildcards.model} --seed {wildcards.seed} "
        "--train data/n2f/{wildcards.task}/train --vocab data/n2f/{wildcards.task}/vocab.json "
        "--out n2f/models/{wildcards.task}/{wildcards.model}-s{wildcards.seed} "
        "--checkpoints n2f/checkpoints/{wildcards.task}/{wildcards.model}-s{wildcards.seed} > {log} 2>&1")
    # ${key} of a foreach stage: the wildcard the rule names; other references: their params value
    assert "--dataset {wildcards.dataset} " in stage_shell("summarization-data", params, key="dataset")
    unbound = f"{params['n2f']['interpret']['unbinding']['model']}-s{params['n2f']['seeds'][0]}"
    assert f"--model-dir n2f/models/{{wildcards.task}}/{unbound} " in stage_shell("interpret-n2f", params)
