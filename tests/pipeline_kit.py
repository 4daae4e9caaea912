"""A micro configuration of the whole project and the tools run on a copy of it (end-to-end tests):
the real generator, Snakemake and DVC, each failing with the tail of its output."""

import json
import re
import subprocess
import sys
from pathlib import Path

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


NOTHING = "Nothing to be done"  # a Snakemake run or dry run with no job


def dvc_plans(root, generate_python) -> set[str]:
    """The stages `dvc status` names (matrix stages as `name@values`)."""
    shown = dvc(root, generate_python, "status", "--json").strip().splitlines()[-1]
    return set(json.loads(shown))


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


# Files whose code runs in a stage's process but only declares or dispatches it: the command line (tprepro/cli.py),
# the registry (experiments/__init__.py) and each experiment's declarations (experiments/<name>/cli.py: its Stages
# and the few lines handing a command's arguments to its stage function). A stage's code is everything else it runs.
DECLARATIONS = re.compile(r"cli\.py|experiments/__init__\.py|experiments/\w+/cli\.py")


def stage_entries(audit_log):
    """The TPREPRO_AUDIT_LOG entries of stage commands (validate, dvc-yaml and other tools left out)."""
    from tprepro.experiments import experiment_of

    for line in Path(audit_log).read_text().splitlines():
        entry = json.loads(line)
        try:
            experiment_of(entry["command"])
        except KeyError:  # not a stage
            continue
        yield entry


def undeclared_code(audit_log) -> dict[str, list[str]]:
    """{stage: project files whose code its commands ran that its Stage.code does not cover} from the file the
    commands appended to (tprepro.audit): modules imported after the command line started and files whose functions
    were called, DECLARATIONS left out."""

    import tprepro
    from tprepro.experiments import code_files

    package = Path(tprepro.__file__).resolve().parent
    missing: dict[str, set[str]] = {}
    for entry in stage_entries(audit_log):
        declared = {Path(f).relative_to(package).as_posix() for f in code_files(entry["command"], str(package))}
        left = {file for file in entry["code"] if not DECLARATIONS.fullmatch(file)} - declared
        if left:
            missing.setdefault(entry["command"], set()).update(left)
    return {stage: sorted(files) for stage, files in missing.items()}


# Declared params keys a stage reads only in part or not at all under the end-to-end runs' settings, as other
# settings or other jobs of it read them: (stage, key) -> why.
READ_SOMETIMES = {
    ("n2f-data", "n2f.{task}.data"): "train/test are read with source: release, generate with source: generate",
    ("n2f-quality", "n2f.{task}.data"): "as n2f-data: which keys depends on source",
    ("n2f-evaluate", "n2f.{task}.data"): "as n2f-data: which keys depends on source",
    ("n2f-tables", "n2f.{task}.data"): "as n2f-data: which keys depends on source",
    ("n2f-tables", "n2f.{task}.models"): "the entries n2f.models lists (the weights column)",
    ("interpret-n2f", "n2f.interpret.unbinding"): "clusters.<task> of the job's task",
    ("interpret-mathematics", "interpret.one_hotness"): "discrete-role (TPT-d) models only",
    ("interpret-two-variable", "two_variable.interpret.ponder"): "adaptive (AUT) models only",
}
_FLAGS = {"task": "--task", "model": "--model", "dataset": "--dataset"}  # a job's wildcards, from its command line


def misdeclared_params(audit_log, params: dict) -> dict[str, dict[str, list[str]]]:
    """{stage: {"undeclared": keys its commands read that no declared params key covers, "partial": declared keys of
    which its commands read only some keys, "unread": declared keys they read nothing of}} from the file the commands
    appended to (tprepro.cli.AUDIT_LOG) and the `params` they ran with: a stage's declared keys are what it reads
    (issue 54). A declared key is read if one job of the stage reads it whole (its wildcards filled in from the
    job's command line); a Layered entry's override sections are read for its keys only; READ_SOMETIMES names the
    keys read only under other settings."""
    import re

    from tprepro.experiments import stage
    from tprepro.params.layered import Layered
    from tprepro.params.references import setting

    undeclared: dict[str, set[str]] = {}
    coverage: dict[tuple[str, str], list[set[str] | None]] = {}  # (stage, key) -> each job's unread keys under it
    for entry in stage_entries(audit_log):
        declared = stage(entry["command"])
        reads, argv = set(entry["params"]), entry["argv"]
        names = {name: argv[argv.index(flag) + 1] for name, flag in _FLAGS.items() if flag in argv}
        layered = [item for item in declared.params if isinstance(item, Layered)]
        patterns = [re.compile(re.sub(r"\\\{\w+\\\}", r"[^.]+", re.escape(key))) for key in declared.params_keys]
        for key in reads:
            prefixes = [".".join(key.split(".")[:n]) for n in range(1, key.count(".") + 2)]
            if not any(pattern.fullmatch(prefix) for pattern in patterns for prefix in prefixes):
                undeclared.setdefault(declared.name, set()).add(key)
        for key in declared.params_keys:
            try:
                instance = key.format(**names)
            except KeyError:
                continue
            only = next((item.read_under(key) for item in layered if key in item.params_keys()), None)
            unread = _unread(instance, setting(params, instance), reads, only)
            if unread is None and any(_set_by_override(item, instance, params, names) for item in layered):
                unread = set()  # a shared key its experiment's override sets: not read, rightly
            coverage.setdefault((declared.name, key), []).append(unread)
    found: dict[str, dict[str, list[str]]] = {name: {"undeclared": sorted(keys)} for name, keys in undeclared.items()}
    for (name, key), jobs in coverage.items():
        if (name, key) in READ_SOMETIMES:
            continue
        if all(unread is None for unread in jobs):
            found.setdefault(name, {}).setdefault("unread", []).append(key)
        elif not any(unread == set() for unread in jobs):
            least = min((unread for unread in jobs if unread), key=len)
            found.setdefault(name, {}).setdefault("partial", []).append(f"{key} (unread: {', '.join(sorted(least))})")
    return found


def _set_by_override(layered, key: str, params: dict, names: dict[str, str]) -> bool:
    """Whether shared key `key` of Layered entry `layered` is set by one of its override sections in `params`."""
    from tprepro.params.references import setting

    if key not in layered.shared_keys():
        return False
    name = key.rpartition(".")[2]
    for section in layered.over:
        try:
            if name in setting(params, section.format(**names)):
                return True
        except KeyError:
            continue
    return False


def _unread(key: str, value, reads: set[str], only: tuple[str, ...] | None = None) -> set[str] | None:
    """The keys under `key` (whose params value is `value`) that no read covers; None if nothing under it was read.
    `only`: just these keys of it are expected to be read."""
    if key in reads:
        return set()
    if only is not None:
        left = {f"{key}.{name}" for name in only} - reads
        return None if len(left) == len(only) else left
    if not isinstance(value, dict):
        return None
    if not value:
        return set()  # an empty section: nothing to read
    left, read_any = set(), False
    for name, child in value.items():
        part = _unread(f"{key}.{name}", child, reads)
        read_any |= part is not None
        left |= {f"{key}.{name}"} if part is None else part
    return left if read_any else None
