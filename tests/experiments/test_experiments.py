"""The experiment registry: a new experiment is one folder under experiments/ (plus one `.smk` include),
and the CLI, `tprepro validate`, the generated dvc.yaml and Snakemake all pick it up."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, copy_project, tool_env

TOY_CLI = '''"""A toy experiment: one stage that counts to the params' train.steps."""

from pathlib import Path

from tprepro.experiments import COMMON, DvcStage, Experiment, Stage, options
from tprepro.work import Work


def _counted(params: dict, item: dict) -> Work:
    return Work("generate", params["train"]["steps"])


def _count(args) -> None:
    from tprepro.params import load_params

    Path(args.out).write_text(f"{load_params(args.params)['train']['steps']}\\n")


EXPERIMENT = Experiment(
    name="toy",
    title="A toy experiment",
    stages=(Stage("toy-count", "write the number of training steps", options(out="the count file"), _count,
                  code=(*COMMON, "experiments/toy/cli.py"), params=("train.steps",), family="tables", work=_counted,
                  dvc=(DvcStage("tprepro toy-count --out results/toy.txt", results=("results/toy.txt",)),)),),
)
'''

TOY_RULE = '''
rule toy_count:
    input:
        *stage_inputs("toy-count", P),
        code=code_digest("toy-count"),
    output:
        *stage_outputs("toy-count"),
    params:
        **settings("toy-count", P),
    log:
        "logs/toy.log",
    shell:
        stage_shell("toy-count", P)
'''


@pytest.fixture(scope="module")
def toy_project(tmp_path_factory):
    """A copy of the project with the toy experiment added: its package and its rule file included."""
    root = copy_project(tmp_path_factory.mktemp("toy") / "repo")
    package = root / "src/tprepro/experiments/toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(TOY_CLI)
    (root / "workflow/rules/toy.smk").write_text(TOY_RULE)
    with (root / "Snakefile").open("a") as snakefile:
        snakefile.write('\ninclude: "workflow/rules/toy.smk"\n')
    return root


def run(root, *argv) -> str:
    """stdout of `argv` in `root`, importing the project copy's tprepro (with its toy experiment)."""
    result = subprocess.run(argv, cwd=root, env=tool_env(PYTHONPATH=str(root / "src")), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def tprepro(root, *argv) -> str:
    return run(root, sys.executable, "-m", "tprepro", *argv)


def test_the_cli_lists_the_new_experiments_stage_with_an_example(toy_project):
    assert "toy-count" in tprepro(toy_project, "--help")
    assert "tprepro toy-count --out results/toy.txt" in tprepro(toy_project, "toy-count", "--help")


def test_validate_accepts_the_params_with_the_new_experiment(toy_project):
    tprepro(toy_project, "validate", "--params", "params.yaml")


def test_the_generated_dvc_yaml_has_the_new_stage_and_dvc_reads_it(toy_project):
    import yaml

    text = tprepro(toy_project, "dvc-yaml")
    entry = yaml.safe_load(text)["stages"]["toy_count"]
    assert entry["cmd"] == "tprepro toy-count --out results/toy.txt"
    assert "src/tprepro/experiments/toy/cli.py" in entry["deps"] and entry["params"] == ["train.steps"]
    (toy_project / "dvc.yaml").write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=toy_project, check=True)
    assert "toy_count" in run(toy_project, sys.executable, "-m", "dvc", "stage", "list", "--name-only").split()


def test_snakemake_plans_the_new_rule_with_its_stage_code_and_params(toy_project):
    """`rule all` asks for it (nothing reads its output), so a plain `snakemake` plans it."""
    plan = run(toy_project, sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1")
    assert "rule toy_count:" in plan and ".snakemake/tprepro/code/toy-count.sha256" in plan
    assert "tprepro toy-count --out results/toy.txt" in plan


def test_the_plan_prices_the_new_stages_work_in_its_declared_cluster_family(toy_project):
    import json

    plan = json.loads(tprepro(toy_project, "plan", "--params", "params.yaml", "--json", "-"))
    job = next(job for job in plan["jobs"] if job["stage"] == "toy-count")
    assert job["family"] == "tables" and job["work"]["kind"] == "generate" and job["work"]["items"] == 1000


def test_adding_it_touched_only_its_folder_the_rule_file_and_one_include(toy_project):
    """Beside its own folder and rule file, only the Snakefile's include and the regenerated dvc.yaml differ."""
    (toy_project / "dvc.yaml").write_text(tprepro(toy_project, "dvc-yaml"))
    skipped = {".snakemake", ".git", ".dvc", "__pycache__"}
    changed = sorted(str(path.relative_to(toy_project)) for path in toy_project.rglob("*")
                     if path.is_file() and not skipped & set(path.relative_to(toy_project).parts)
                     and not same_file(REPO / path.relative_to(toy_project), path))
    assert changed == ["Snakefile", "dvc.yaml", "src/tprepro/experiments/toy/__init__.py",
                       "src/tprepro/experiments/toy/cli.py", "workflow/rules/toy.smk"]


def same_file(original, copy) -> bool:
    return original.is_file() and original.read_bytes() == copy.read_bytes()


@pytest.mark.parametrize("table", ["results/tables/table1", "results/tables/table1.md", "results/tables/v1.2"])
def test_a_table_stage_writes_three_formats_beside_the_path_its_table_option_names(table):
    import argparse

    from tprepro.experiments import table_arguments, table_outputs

    parser = argparse.ArgumentParser()
    table_arguments(curves="the figure")(parser)
    args = parser.parse_args(["--models-dir", "m", "--eval-dir", "e", "--table", table, "--metrics", "x.json",
                              "--curves", "c.png"])
    stem = table.removesuffix(".md")
    assert table_outputs(args, "curves") == {
        "table_csv": Path(f"{stem}.csv"), "table_md": Path(f"{stem}.md"), "table_html": Path(f"{stem}.html"),
        "metrics": Path("x.json"), "curves": Path("c.png")}


def test_every_input_a_command_reads_by_default_is_one_its_dvc_stage_tracks():
    """Data options default to the pipeline's paths, so dvc.yaml's commands need not name them; DVC
    must then track each such path: as a dep, under a dep, holding deps, or through its index file."""
    from tprepro.experiments import experiments

    untracked = []
    for experiment in experiments().values():
        for stage in experiment.stages:
            parser = argparse.ArgumentParser()
            stage.arguments(parser)
            for action in parser._actions:
                if not isinstance(action.default, (str, tuple)) or action.dest == "help":
                    continue
                for dvc in stage.dvc:
                    if action.option_strings[0] in dvc.cmd:
                        continue  # the command names it
                    # the data stage's --out is its output; a table stage's plot data, its plots
                    tracked = dvc.deps + dvc.outs + tuple(path for plot in dvc.plots for path in plot)
                    for path in [action.default] if isinstance(action.default, str) else action.default:
                        if not any(path == dep or path.startswith(f"{dep}/") or dep.startswith(f"{path}/")
                                   or dep == f"{path}.json" for dep in tracked):
                            untracked.append(f"{dvc.name or stage.name} {action.option_strings[0]} {path}")
    assert not untracked
