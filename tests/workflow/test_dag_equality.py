"""Snakemake and DVC describe the same pipeline: equal outputs and equal `tprepro` commands."""

import re
import subprocess
import sys

import pytest

from helpers import REPO, copy_project, load_default_params, micro_n2f, tool_env, write_params


def snakemake_jobs(root):
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--forceall", "--cores", "2"],
        cwd=root, env=tool_env(), capture_output=True, text=True, check=True,
    ).stdout
    summary = subprocess.run(
        [sys.executable, "-m", "snakemake", "--summary", "--cores", "2"],
        cwd=root, env=tool_env(), capture_output=True, text=True, check=True,
    ).stdout
    outputs = {line.split("\t")[0] for line in summary.splitlines()[1:] if line.strip()}
    commands = {re.sub(r"\s*>\s*\S+\s+2>&1$", "", line.split("Shell command: ", 1)[1]).strip()
                for line in out.splitlines() if "Shell command: " in line} - {"None"}  # rule all
    return outputs, commands


def dvc_stages(root):
    from dvc.repo import Repo

    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    with Repo(str(root)) as repo:
        stages = list(repo.index.stages)
        outputs = {out.def_path for stage in stages for out in stage.outs}
        commands = {" ".join(stage.cmd.split()) for stage in stages}
    return outputs, commands


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("dag") / "repo")


def test_snakemake_and_dvc_build_the_same_outputs_with_the_same_commands(project):
    smk_outputs, smk_commands = snakemake_jobs(project)
    dvc_outputs, dvc_commands = dvc_stages(project)
    assert smk_outputs == dvc_outputs
    assert smk_commands == dvc_commands
    assert any(o.startswith("data/mathematics/extrapolate/") for o in dvc_outputs)
    assert "results/tables/table1.md" in dvc_outputs


def test_no_line_of_a_job_in_the_default_listing_is_over_300_characters(project):
    """`snakemake -n -F` reads at a glance: a job takes its code as one digest file, Mathematics data
    as one index per split, a run as its model.pt or its evaluation; a command names its outputs
    and what varies by job (fixed inputs are its options' defaults); per-run outputs live in their
    experiment's folder, so `all` lists short paths. Not checked: Snakemake's closing summary, which
    lists the rules, and the report job's inputs: one output of every job whose tables or figures it shows
    (what `all` listed before the report stage read them)."""
    listing = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-F", "--cores", "2"], cwd=project,
                             env=tool_env(), capture_output=True, text=True, check=True).stdout
    jobs = listing[:listing.rindex("Job stats:")]  # the listing's own job stats come first, the jobs after
    rule, long_lines = None, []
    for line in jobs.splitlines():
        rule = (re.match(r"(?:local)?rule (\w+):", line) or [None, rule])[1]
        if rule not in (None, "report") and len(line) > 300:
            long_lines.append(f"{rule}: {line[:120]}... ({len(line)} characters)")
    assert rule == "all" and not long_lines


def test_both_n2f_tasks_have_equal_stages_in_both_tools(tmp_path):
    """With MathQA and AlgoLisp in n2f.tasks: every N2F stage of both tasks, equal in both tools."""
    root = copy_project(tmp_path / "repo")
    write_params(root / "params.yaml", micro_n2f(load_default_params(), ("mathqa", "algolisp")))
    smk_outputs, smk_commands = snakemake_jobs(root)
    dvc_outputs, dvc_commands = dvc_stages(root)
    assert smk_outputs == dvc_outputs and smk_commands == dvc_commands
    for task in ("mathqa", "algolisp"):
        assert {f"results/tables/{task}.md", f"results/n2f/{task}_quality.json",
                f"n2f/models/{task}/tp_n2f-s1/model.pt", f"n2f/eval/{task}/lstm2tp-s1.csv"} <= dvc_outputs


def test_the_committed_dvc_yaml_is_the_one_the_stage_registry_generates():
    """dvc.yaml is written by `make dvc-yaml`: an edited Stage without a regenerated file fails here."""
    from tprepro.dvc_yaml import generate

    assert (REPO / "dvc.yaml").read_text() == generate(), "dvc.yaml is stale: run `make dvc-yaml`"


def test_every_stage_names_source_files_that_exist():
    """The code a stage declares (its dvc.yaml deps, its Snakemake digest) exists and holds Python."""
    from tprepro.experiments import code_files, experiments

    for stage in (stage for experiment in experiments().values() for stage in experiment.stages):
        assert all((REPO / "src/tprepro" / path).exists() for path in stage.code), stage.name
        assert code_files(stage.name, root=str(REPO / "src/tprepro")), stage.name


def test_every_rule_takes_its_stage_params_from_the_registry():
    from tprepro.experiments import stage

    rules = "".join(path.read_text() for path in sorted((REPO / "workflow" / "rules").glob("*.smk")))
    for block in re.split(r"^rule ", rules, flags=re.M)[1:]:
        command = re.search(r'"tprepro ([\w-]+)', block)
        if command and stage(command.group(1)).params:
            assert f'**settings("{command.group(1)}", P)' in block, block.splitlines()[0]


def test_editing_a_model_file_reruns_training_evaluation_and_tables_only(project):
    """Each rule takes its stage's code as one digest file: an edited model file reruns
    train/evaluate/tables, not data; the job listing names the digest, not the source files."""
    import os
    import time

    outputs, _ = snakemake_jobs(project)
    before = time.time() - 60  # older than the digest files the next parse rewrites
    for output in outputs:  # every output present and up to date (folders have no suffix)
        path = project / output
        path.mkdir(parents=True, exist_ok=True) if not path.suffix else (
            path.parent.mkdir(parents=True, exist_ok=True), path.touch())
        os.utime(path, (before, before))
    for digest in (project / ".snakemake/tprepro/code").glob("*.sha256"):
        os.utime(digest, (before - 60, before - 60))
    # these times stand for a finished run's: the ledger of the times content was first seen at starts from them
    (project / ".snakemake/tprepro/output_times.json").unlink(missing_ok=True)
    def dry_run():
        return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--rerun-triggers", "mtime"],
                              cwd=project, env=tool_env(), capture_output=True, text=True, check=True).stdout
    assert "Nothing to be done" in dry_run()
    model = project / "src/tprepro/models/transformer.py"
    model.write_text(model.read_text() + "\n# an edit\n")
    out = dry_run()
    assert "src/tprepro/models" not in out and ".snakemake/tprepro/code/train.sha256" in out
    jobs = {line.split()[0] for line in out.split("Job stats:")[1].split("total")[0].splitlines()[2:] if line.strip()}
    assert "evaluate" in jobs, out
    assert {"train", "evaluate", "tables", "two_variable_train", "n2f_train"} <= jobs
    assert not jobs & {"data", "vocab", "two_variable_data", "n2f_data", "n2f_quality"}


def test_snakemake_lint_reports_nothing(project):
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=project, env=tool_env(),
                            capture_output=True, text=True)
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr, result.stdout
