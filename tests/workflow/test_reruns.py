"""The rerun oracle (issue 54): what a change must rerun, derived from the job graph, against what Snakemake and DVC
plan and do, on copies of one finished micro project (every experiment, the real generator, both tools).

For each change a researcher makes after a first run, the jobs reading what changed are derived from the job graph
(a settings key: the jobs whose Stage declares a key covering it; a source file: the jobs whose Stage code holds it;
an output's new content: the jobs that read it); `dvc status` must name exactly those, and `snakemake -n` exactly
those and everything downstream of them. Each tool's real run then completes with every output present, and a
second invocation plans nothing. Changes that leave content alone (a touch, a restore by `dvc checkout`, a copy of
the project, a lost or damaged output-time ledger) plan nothing in either tool. The finished project's own run
checks that each stage's declared params keys and code are what its commands read and run (tests/pipeline_kit.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from helpers import copy_project, micro_n2f, write_params
from pipeline_kit import dvc, micro_params, misdeclared_params, run, snakemake, undeclared_code
from tprepro.experiments import stage as declared_stage
from tprepro.job_graph import Job, jobs, upstream
from tprepro.params import load_params

pytestmark = pytest.mark.slow

NOTHING = "Nothing to be done"


def oracle_params() -> dict:
    """The micro project, with an AlgoLisp task of two models, and one model file over 1 MB (Snakemake does not
    checksum such an input: its reruns follow times alone)."""
    params = micro_n2f(micro_params(), tasks=("algolisp",))
    params["n2f"]["models"] = ["tp_n2f", "lstm2lstm"]
    params["models"]["tp_transformer"] = {"preset": "tp_transformer_tiny"}
    return params


@dataclass
class Project:
    root: Path
    params: dict

    def copy(self, dest: Path, keep_times: bool = True) -> "Project":
        """A copy at `dest`; with keep_times, every file keeps its mtime (as the finished project is)."""
        subprocess.run(["cp", "-a" if keep_times else "-r", str(self.root), str(dest)], check=True)
        return Project(dest, self.params)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, generate_python) -> Project:
    """The micro project run to the end by Snakemake and recorded for DVC (`make dvc-commit`), in a git commit."""
    root = copy_project(tmp_path_factory.mktemp("oracle") / "finished")
    params = oracle_params()
    write_params(root / "params.yaml", params)
    audit = root.parent / "audit.jsonl"
    snakemake(root, generate_python, TPREPRO_AUDIT_LOG=str(audit))
    assert undeclared_code(audit) == {}  # each stage's Stage.code covers the code its commands ran
    assert misdeclared_params(audit, load_params(root / "params.yaml")) == {}  # and its params, the keys they read
    run(["git", "init", "-q"], root, generate_python)
    run(["make", "--no-print-directory", "dvc-commit", f"BIN={Path(sys.executable).parent}"], root, generate_python)
    for setting in (["user.name", "tprepro tests"], ["user.email", "tests@tprepro.invalid"]):
        run(["git", "config", *setting], root, generate_python)
    run(["git", "add", "-A"], root, generate_python)
    run(["git", "commit", "-q", "-m", "the finished micro project"], root, generate_python)
    assert NOTHING in snakemake(root, generate_python, "-n")
    assert dvc_plans(root, generate_python) == set()
    return Project(root, params)


# --- what each tool plans, and what the job graph says it must


def snakemake_plans(root: Path, generate_python) -> set[str]:
    """The first output of every job a Snakemake dry run plans (rule all left out)."""
    planned = set()
    for line in snakemake(root, generate_python, "-n").splitlines():
        if line.startswith("    output: "):
            planned.add(line.removeprefix("    output: ").split(", ")[0])
    return planned


def dvc_plans(root: Path, generate_python) -> set[str]:
    """The stages `dvc status` names (matrix stages as `name@values`)."""
    shown = dvc(root, generate_python, "status", "--json").strip().splitlines()[-1]
    return set(json.loads(shown))


def first_outputs(chosen: set[Job]) -> set[str]:
    return {job.outputs[0] for job in chosen}


def downstream(params: dict, changed: set[Job]) -> set[Job]:
    """`changed` and every job that reads, directly or not, what they write."""
    before = upstream(jobs(params))
    closure, grew = set(changed), True
    while grew:
        found = {job for job, writers in before.items() if closure & set(writers)} - closure
        closure |= found
        grew = bool(found)
    return closure


def readers(params: dict, paths: set[str]) -> set[Job]:
    """The jobs that read one of `paths` (a dep that is it, or a folder holding it)."""
    return {job for job in jobs(params)
            if any(path == dep or path.startswith(f"{dep}/") for path in paths for dep in job.deps)}


def declaring(params: dict, key: str) -> set[Job]:
    """The jobs whose Stage declares a params key covering dotted `key` (its wildcards filled in by the job's)."""
    found = set()
    for job in jobs(params):
        values = {name: value for name, value in job.item}
        for declared in declared_stage(job.stage).params_keys:
            try:
                instance = declared.format(**values)
            except KeyError:
                continue
            if key == instance or key.startswith(f"{instance}."):
                found.add(job)
    return found


def running(params: dict, source: str) -> set[Job]:
    """The jobs whose Stage code holds source file `source` (relative to src/tprepro)."""
    from tprepro.experiments import code_files

    return {job for job in jobs(params) if f"src/tprepro/{source}" in code_files(job.stage)}


# --- the checks


def check_plans(project: Project, generate_python, changed: set[Job]) -> None:
    """DVC names exactly the `changed` jobs; Snakemake plans them and everything downstream of them."""
    assert changed, "the change must rerun something"
    assert dvc_plans(project.root, generate_python) == {job.dvc_name for job in changed}
    assert snakemake_plans(project.root, generate_python) == first_outputs(downstream(project.params, changed))


def check_runs_converge(project: Project, tmp_path: Path, generate_python) -> None:
    """Each tool, from the changed project: its real run completes with every output present, and a second
    invocation plans nothing (each on its own copy)."""
    by_dvc = project.copy(tmp_path / "by-dvc")
    dvc(by_dvc.root, generate_python, "repro")
    assert dvc_plans(by_dvc.root, generate_python) == set()
    check_outputs(by_dvc)
    snakemake(project.root, generate_python)
    assert NOTHING in snakemake(project.root, generate_python, "-n")
    check_outputs(project)


def check_outputs(project: Project) -> None:
    missing = [out for job in jobs(project.params) for out in job.outputs if not (project.root / out).exists()]
    assert missing == []


def check_nothing_planned(project: Project, generate_python) -> None:
    assert NOTHING in snakemake(project.root, generate_python, "-n")
    assert dvc_plans(project.root, generate_python) == set()
    assert NOTHING in snakemake(project.root, generate_python)  # and a real invocation does nothing


# --- settings: one key of each section a stage reads


def _set(params: dict, key: str, value) -> dict:
    import copy

    changed = copy.deepcopy(params)
    *path, leaf = key.split(".")
    node = changed
    for part in path:
        node = node[part]
    node[leaf] = value
    return changed


SETTINGS = {  # key -> a new value
    "models.tp_transformer.d_ff": 96,  # a model's size
    "train.steps": 15,
    "evaluate.train_sample": 15,
    "evaluate.batch_size": 64,
    "two_variable.train.steps": 5,
    "n2f.evaluate.max_tuples": 5,
    "summarization.evaluate.beam_size": 2,
}


@pytest.mark.parametrize("key", SETTINGS)
def test_a_setting_reruns_what_reads_it(finished, tmp_path, generate_python, key):
    project = finished.copy(tmp_path / "project")
    project.params = _set(project.params, key, SETTINGS[key])
    write_params(project.root / "params.yaml", project.params)
    changed = declaring(project.params, key)
    check_plans(project, generate_python, changed)
    check_runs_converge(project, tmp_path, generate_python)


# --- code: a file of each kind a stage runs


CODE = ("report/published.py",  # a core module the table stages run
        "experiments/two_variable/data.py",  # an experiment's module its data stage runs
        "evaluate/answering.py",  # a module the evaluations run through a package their Stage.code names ("evaluate")
        "experiments/summarization/settings.py")  # imported when the command line starts, run by the stages


@pytest.mark.parametrize("source", CODE)
def test_a_source_edit_reruns_what_runs_it(finished, tmp_path, generate_python, source):
    project = finished.copy(tmp_path / "project")
    path = project.root / "src/tprepro" / source
    path.write_text(path.read_text() + "# an edit that changes no behaviour\n")
    changed = running(project.params, source)
    check_plans(project, generate_python, changed)
    check_runs_converge(project, tmp_path, generate_python)


# --- new content at each tier, accepted for DVC as its stage's output (`dvc commit`), as a retrain elsewhere is


def _new_shard(root: Path) -> str:
    """One module's training shards rewritten in place with one problem fewer (a valid dataset; the folder and
    Snakemake's timestamp in it keep their times). Returns the folder."""
    from tprepro.data.shards import iter_rows, open_dataset, write_dataset

    folder = root / "data/mathematics/train-easy/numbers__place_value"
    rows = list(iter_rows(open_dataset(folder)))[:-1]
    remade = root.parent / "remade"
    write_dataset(remade, [rows], open_dataset(folder).schema)
    for old in folder.glob("*.parquet"):
        old.unlink()
    for made in remade.iterdir():
        shutil.copyfile(made, folder / made.name)
    return str(folder.relative_to(root))


def _new_vocab(root: Path) -> str:
    """vocab.json rewritten with other bytes (the same vocabulary, one more newline) and its digest."""
    from tprepro.io import record_digest

    vocab = root / "data/vocab.json"
    vocab.write_bytes(vocab.read_bytes() + b"\n")
    record_digest(vocab)
    return "data/vocab.json"


def _new_model(root: Path) -> str:
    """A model over 1 MB with one weight moved by 1e-6, as a retrain on another device gives: its evaluation comes out
    byte-identical."""
    path = root / "mathematics/models/tp_transformer-s1/model.pt"
    assert path.stat().st_size > 1_000_000  # Snakemake checksums inputs up to 1 MB only
    saved = torch.load(path, map_location="cpu", weights_only=False)
    weights = saved["model"] if "model" in saved else saved
    first = next(key for key, value in weights.items() if torch.is_floating_point(value))
    weights[first] = weights[first] + 1e-6
    torch.save(saved, path)
    return "mathematics/models/tp_transformer-s1/model.pt"


CONTENT = {"shard": _new_shard, "vocab": _new_vocab, "model": _new_model}


@pytest.mark.parametrize("tier", CONTENT)
def test_new_content_reruns_what_reads_it(finished, tmp_path, generate_python, tier):
    project = finished.copy(tmp_path / "project")
    changed_path = CONTENT[tier](project.root)
    (writer,) = [job for job in jobs(project.params) if changed_path in job.outputs]
    dvc(project.root, generate_python, "commit", "--force", writer.dvc_name)  # the new content is the stage's
    check_plans(project, generate_python, readers(project.params, {changed_path}))
    check_runs_converge(project, tmp_path, generate_python)
    if tier == "model":  # the evaluation wrote the same bytes: given its old time back it would rerun forever
        evaluation = project.root / "mathematics/eval/tp_transformer-s1.csv"
        assert evaluation.read_bytes() == (finished.root / "mathematics/eval/tp_transformer-s1.csv").read_bytes()


# --- what leaves content alone plans nothing


def test_a_touch_or_a_rerun_by_hand_with_the_same_result_plans_nothing(finished, tmp_path, generate_python):
    project = finished.copy(tmp_path / "project")
    for path in ("data/vocab.json", "mathematics/models/tp_transformer-s1/model.pt",
                 "data/mathematics/train-easy/numbers__place_value"):
        target = project.root / path
        for file in ([target] if target.is_file() else sorted(target.glob("*.parquet"))):
            file.touch()
    (data_job,) = [job for job in jobs(project.params) if job.outputs == ("data/mathematics/train-hard/numbers__place_value",)]
    run(data_job.command.split(), project.root, generate_python)  # a new folder, the same shards
    check_nothing_planned(project, generate_python)


def test_outputs_restored_by_dvc_checkout_plan_nothing(finished, tmp_path, generate_python):
    project = finished.copy(tmp_path / "project")
    for path in ("data/mathematics/train-hard/arithmetic__add_or_sub", "data/vocab.json",
                 "mathematics/models/transformer-s1/model.pt", "mathematics/eval/transformer-s1.csv",
                 "results/tables/table1.md"):
        target = project.root / path
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    dvc(project.root, generate_python, "checkout")
    check_nothing_planned(project, generate_python)


def test_a_copy_of_the_project_plans_nothing(finished, tmp_path, generate_python):
    check_nothing_planned(finished.copy(tmp_path / "project", keep_times=False), generate_python)


@pytest.mark.parametrize("ledger", [None, b'{"data/vocab.json": {"dig', b"[1, 2, 3]",
                                    b'{"data/vocab.json": "a string"}'], ids=["deleted", "truncated", "list", "entry"])
def test_a_lost_or_damaged_ledger_plans_nothing(finished, tmp_path, generate_python, ledger):
    project = finished.copy(tmp_path / "project")
    path = project.root / ".snakemake/tprepro/output_times.json"
    path.unlink() if ledger is None else path.write_bytes(ledger)
    out = snakemake(project.root, generate_python, "-n")
    assert NOTHING in out
    if ledger is not None and ledger.startswith((b"[", b'{"data/vocab.json": "')):
        assert f"{path.relative_to(project.root)}: not a ledger" in out  # named, and started again
    check_nothing_planned(project, generate_python)


def test_an_older_experiment_applied_is_up_to_date_for_both_tools(finished, tmp_path, generate_python):
    """`dvc exp save -n baseline; dvc exp run -S train.steps=…; dvc exp apply baseline`, then `dvc repro` and
    Snakemake: both complete with the baseline's tables, byte for byte, and nothing to do (issue 54, case 1: the
    evaluations' digests came back with them, where the tables stage refused them and DVC deleted Table 1)."""
    project = finished.copy(tmp_path / "project")
    tables = {path: path.read_bytes() for path in sorted((project.root / "results/tables").glob("table1.*"))}
    dvc(project.root, generate_python, "exp", "save", "-n", "baseline")
    dvc(project.root, generate_python, "exp", "run", "-S", "train.steps=18")
    assert (project.root / "results/tables/table1.csv").read_bytes() != tables[project.root / "results/tables/table1.csv"]
    dvc(project.root, generate_python, "exp", "apply", "baseline")
    dvc(project.root, generate_python, "repro")
    assert {path: path.read_bytes() for path in tables} == tables
    assert dvc_plans(project.root, generate_python) == set()
    assert NOTHING in snakemake(project.root, generate_python)
    assert {path: path.read_bytes() for path in tables} == tables
