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
              "train": {"steps": 9, "lr": 2, "betas": [0.9, 0.99]}}
    entries = settings("n2f-train", params)
    # the shared train: keys one by one, less those n2f.train's schema requires (steps, lr, ...: never read)
    assert list(entries)[:4] == ["n2f_task_models_model", "n2f_train", "n2f_task_train", "train_betas"]
    assert not {"train_steps", "train_lr", "train"} & set(entries)
    assert entries["n2f_train"] == {"lr": 1} and entries["train_betas"] == [0.9, 0.99]
    assert entries["train_packing"] is None  # an optional key the file leaves out
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


def test_a_rules_outputs_are_its_stages_dvc_outputs_as_snakemake_patterns():
    import pytest
    from snakemake.io import is_flagged

    from tprepro.errors import TpreproError
    from tprepro.workflow import pattern, stage_outputs

    train = stage_outputs("n2f-train")
    assert train == ["n2f/models/{task}/{model}-s{seed}/model.pt",
                     "n2f/models/{task}/{model}-s{seed}/train_metrics.json"]
    assert not any(is_flagged(path, "directory") or is_flagged(path, "report") for path in train)
    # a folder (no suffix) is a directory; ${key} is the wildcard the rule names
    assert is_flagged(stage_outputs("summarization-data", key="dataset")[0], "directory")
    assert stage_outputs("summarization-data", key="dataset") == ["data/summarization/{dataset}"]
    # a Reported output carries its caption and its experiment's (or its own) report category
    table = {str(path): path for path in stage_outputs("n2f-tables")}
    assert list(table) == ["results/tables/{task}.csv", "results/tables/{task}.md", "results/tables/{task}.html",
                           "results/{task}_metrics.json", "results/plots/{task}.csv"]
    shown = table["results/tables/{task}.csv"].flags["report"]
    assert (shown.caption, shown.category) == ("../report/n2f.rst", "TP-N2F")
    assert not is_flagged(table["results/tables/{task}.md"], "report")
    interpreted = stage_outputs("interpret-mathematics")[0]
    assert is_flagged(interpreted, "directory") and interpreted.flags["report"].category == "Interpretation"
    assert interpreted.flags["report"].patterns == ["{name}.png"]
    with pytest.raises(TpreproError, match="wildcards only"):
        pattern("n2f/models/${n2f.seeds}")


def test_every_report_caption_a_stage_names_exists():
    from tprepro.experiments import Reported, experiments

    for stage in (stage for experiment in experiments().values() for stage in experiment.stages):
        for dvc in stage.dvc:
            for path in (*dvc.outs, *dvc.results, *dvc.metrics):
                if isinstance(path, Reported):
                    assert (REPO / "workflow/report" / f"{path.caption}.rst").is_file(), (stage.name, path)


def test_a_rules_inputs_name_one_file_per_upstream_job():
    from tprepro.workflow import stage_inputs

    params = load_default_params()
    params["n2f"]["seeds"] = [1, 2]
    # a run's model.pt stands for its train_metrics.json; the indexes are as declared
    assert stage_inputs("evaluate", params) == [
        "mathematics/models/{model}-s{seed}/model.pt", "data/mathematics/interpolate.json",
        "data/mathematics/extrapolate.json", "data/mathematics/train-easy.json",
        "data/mathematics/train-medium.json", "data/mathematics/train-hard.json"]
    # the data job's train/ stands for its test/ and vocab.json
    assert stage_inputs("n2f-train", params) == ["data/n2f/{task}/train"]
    # eval/ and models/ folders: one evaluation per run over the models and seeds, the task kept as
    # the rule's wildcard; an evaluation stands for its trained model
    models = list(params["n2f"]["models"])
    assert stage_inputs("n2f-tables", params) == ["results/n2f/{task}_quality.json", *(
        f"n2f/eval/{{task}}/{model}-s{seed}.csv" for model in models for seed in (1, 2))]
    # params references take their values; a foreach key is the wildcard the rule names
    unbound = f"{params['n2f']['interpret']['unbinding']['model']}-s1"
    assert stage_inputs("interpret-n2f", params)[:2] == [f"n2f/models/{{task}}/{unbound}/model.pt",
                                                         f"n2f/eval/{{task}}/{unbound}.csv"]
    assert stage_inputs("summarization-data", params, key="dataset") == ["data/summarization/corpus"]


def test_a_folder_no_stage_writes_under_is_named(monkeypatch):
    import dataclasses

    import pytest

    import tprepro.experiments
    from tprepro.errors import TpreproError
    from tprepro.workflow import stage_inputs

    vocab = tprepro.experiments.stage("vocab")
    lost = dataclasses.replace(vocab, dvc=(dataclasses.replace(vocab.dvc[0], deps=("data/nowhere",)),))
    monkeypatch.setattr(tprepro.experiments, "stage", lambda name: lost)
    with pytest.raises(TpreproError, match="stage vocab: no stage writes data/nowhere"):
        stage_inputs("vocab", load_default_params())


def test_rule_all_asks_for_the_report_which_reads_every_table_and_interpretation():
    """The report reads every table and interpretation but the N2F one (experiments/html_report: LEFT_OUT)."""
    from tprepro.job_graph import stage_nodes, upstream_stages
    from tprepro.workflow import final_outputs

    params = load_default_params()
    assert sorted(final_outputs(params)) == sorted(["results/report.html",
                                                    *(f"n2f/interpret/{task}" for task in params["n2f"]["tasks"])])
    nodes = stage_nodes(params)
    report = next(node for node in nodes if node.stage == "report")
    assert {"tables", "two-variable-tables", "n2f-tables", "summarization-tables", "interpret-mathematics",
            "interpret-reconstruction", "interpret-two-variable"} <= upstream_stages(report, nodes)


def test_the_projects_own_files_a_job_reads_are_settled_like_outputs(tmp_path, monkeypatch):
    """The report reads workflow/report (its captions), which no job writes: `cp -r` of the project (new times,
    the same captions) gives the folder its recorded time back, so the report does not rerun; an edited caption
    moves it forward (Snakemake reads the folder's own mtime, which an edit in place leaves), so it does."""
    import subprocess

    from tprepro.output_times import Made, settle
    from tprepro.workflow import made_in_order

    monkeypatch.chdir(tmp_path)
    subprocess.run(["cp", "-rp", str(REPO / "workflow"), "workflow"], check=True)
    made = made_in_order(load_default_params())
    own = made.index(Made(("workflow/report",)))
    assert own < min(index for index, job in enumerate(made) if job.inputs)  # settled before any job reads it
    settle(made)
    recorded = os.stat("workflow/report").st_mtime_ns

    shutil.rmtree("workflow")
    time.sleep(0.01)
    subprocess.run(["cp", "-r", str(REPO / "workflow"), "workflow"], check=True)  # new times
    assert os.stat("workflow/report").st_mtime_ns > recorded
    settle(made)
    assert os.stat("workflow/report").st_mtime_ns == recorded

    with open("workflow/report/workflow.rst", "a", encoding="utf-8") as caption:
        caption.write("\nAn edited introduction.\n")
    settle(made)
    assert os.stat("workflow/report").st_mtime_ns > recorded
