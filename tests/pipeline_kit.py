"""A micro configuration of the whole project and the tools run on a copy of it (end-to-end tests):
the real generator, Snakemake and DVC, each failing with the tail of its output."""

import json
import subprocess
import sys

import pandas as pd

from helpers import load_default_params, micro_n2f, micro_summarization, micro_two_variable, tool_env


def micro_params() -> dict:
    params = load_default_params()
    params["grid"].update(modules=["arithmetic__add_or_sub", "numbers__place_value"],
                          extrapolation_modules=["arithmetic__add_or_sub_big"])
    params["data"].update(train_per_module=60, test_per_module=16, rows_per_shard=40)
    params["train"].update(steps=12, batch_size=8, checkpoint_every=6, log_every=3)
    params["evaluate"].update(train_sample=16)
    for entry in params["models"].values():
        entry.update(d_model=16, n_heads=2, d_ff=32)
    micro_n2f(params)  # no N2F task here: tests/experiments/n2f/test_n2f_pipeline.py runs them
    micro_summarization(params)  # one dataset; tests/experiments/summarization/test_summarization_pipeline.py runs all four
    return micro_two_variable(params)  # `rule all` / `dvc repro` run that experiment too


def run(cmd: list[str], cwd, generate_python, **env) -> str:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                            env=tool_env(TPREPRO_GENERATE_PYTHON=str(generate_python), **env))
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout + result.stderr


def snakemake(root, generate_python, *args, **env) -> str:
    return run([sys.executable, "-m", "snakemake", "--cores", "2", *args], root, generate_python, **env)


def dvc(root, generate_python, *args) -> str:
    return run([sys.executable, "-m", "dvc", *args], root, generate_python)


def planned_jobs(dry_run_output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake dry run as {rule: count}."""
    lines = dry_run_output.split("Job stats:", 1)[1].splitlines()[3:]
    jobs = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        jobs[parts[0]] = int(parts[1])
    return jobs


def check_results(root, params) -> None:
    modules = pd.read_csv(root / "results/tables/mathematics_modules.csv")
    assert list(modules.columns) == ["model", "module", "split", "n", "correct", "accuracy"]
    assert set(modules["model"]) == set(params["grid"]["models"])
    assert set(modules["split"]) == {"interpolate", "extrapolate", "train"}
    assert set(modules[modules.split == "interpolate"]["module"]) == set(params["grid"]["modules"])
    assert (modules[modules.split != "train"]["n"] == params["data"]["test_per_module"]).all()
    table1 = pd.read_csv(root / "results/tables/table1.csv")
    assert set(table1["model"]) == set(params["grid"]["models"]) and (table1["steps"] == 12).all()
    assert (root / "results/figures/mathematics_modules.png").read_bytes()[:4] == b"\x89PNG"
    metrics = json.loads((root / "results/metrics.json").read_text())
    assert metrics["mathematics"]["interpolation_acc"].keys() == set(params["grid"]["models"])


def undeclared_code(imports_log) -> dict[str, list[str]]:
    """{stage: project modules it imported that its Stage.code does not cover} from the file the
    commands appended to (tprepro.cli.IMPORTS_LOG). What the command line imports before the stage
    runs (the registry, each experiment's declarations) is not the stage's code and is not counted."""
    from pathlib import Path

    import tprepro
    from tprepro.experiments import code_files, experiment_of

    package = Path(tprepro.__file__).resolve().parent
    missing: dict[str, set[str]] = {}
    for line in Path(imports_log).read_text().splitlines():
        entry = json.loads(line)
        try:
            experiment_of(entry["command"])
        except KeyError:  # not a stage (validate, dvc-yaml, ...)
            continue
        declared = {Path(f).relative_to(package).as_posix() for f in code_files(entry["command"], str(package))}
        left = set(entry["modules"]) - declared
        if left:
            missing.setdefault(entry["command"], set()).update(left)
    return {stage: sorted(files) for stage, files in missing.items()}
