"""The rerun oracle, content (issue 54): new content at each tier (a data shard, `vocab.json`, a model over 1 MB
whose evaluation comes out byte-identical) reruns exactly its readers in Snakemake and DVC alike; what leaves
content alone (a touch, a rerun by hand, `dvc checkout`, a copy of the project, a lost or damaged output-time ledger)
plans nothing; an older experiment applied is up to date for both tools (tests/workflow/rerun_oracle.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
import yaml
from finished_project import Project
from helpers import readme_compare_line
from pipeline_kit import NOTHING, dvc, dvc_plans, run, snakemake
from rerun_oracle import check_nothing_planned, check_plans, check_runs_converge, readers

from tprepro.job_graph import Job, jobs
from tprepro.train.checkpoint import load_checkpoint, save_checkpoint

pytestmark = pytest.mark.slow


# --- new content at each tier, accepted for DVC as its stage's output (`dvc commit`), as a retrain elsewhere is


def _new_shard(root: Path) -> str:
    """One module's training shards rewritten in place with one problem fewer (a valid dataset; the folder and
    Snakemake's timestamp in it keep their times). Returns the folder."""
    from tprepro.data.shards import SCHEMA, iter_rows, open_dataset, write_dataset

    folder = root / "data/mathematics/train-easy/numbers__place_value"
    dataset = open_dataset(folder)
    rows = list(iter_rows(dataset, columns=SCHEMA.names))[:-1]
    meta = {key: value for key, value in dataset.manifest.items() if key not in ("rows", "shards")}
    remade = root.parent / "remade"
    write_dataset(remade, [rows], **meta)
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
    saved = load_checkpoint(path)
    weights = saved["model"]
    first = next(key for key, value in weights.items() if torch.is_floating_point(value))
    weights[first] = weights[first] + 1e-6
    save_checkpoint(saved, path)
    return "mathematics/models/tp_transformer-s1/model.pt"


CONTENT = {"shard": _new_shard, "vocab": _new_vocab, "model": _new_model}
RUN_TOGETHER = ("shard", "vocab")  # each retrains every Mathematics model: run to the end once, together


def with_new_content(finished: Project, tmp_path: Path, generate_python, tiers) -> tuple[Project, set[Job]]:
    """A copy of the finished project with new content at `tiers`, each accepted for DVC as its stage's output
    (`dvc commit`, as after a retrain elsewhere); and the jobs that read it."""
    project = finished.copy(tmp_path / "project")
    changed = {CONTENT[tier](project.root) for tier in tiers}
    for changed_path in sorted(changed):
        (writer,) = [job for job in jobs(project.params) if changed_path in job.outputs]
        dvc(project.root, generate_python, "commit", "--force", writer.dvc_name)
    return project, readers(project.params, changed)


@pytest.mark.parametrize("tier", CONTENT)
def test_new_content_plans_the_jobs_that_read_it(finished, tmp_path, generate_python, tier):
    project, changed = with_new_content(finished, tmp_path, generate_python, [tier])
    check_plans(project, generate_python, changed)


def test_new_data_and_vocabulary_run_to_the_end_and_converge(finished, tmp_path, generate_python):
    project, changed = with_new_content(finished, tmp_path, generate_python, RUN_TOGETHER)
    check_plans(project, generate_python, changed)
    check_runs_converge(project, tmp_path, generate_python)


def test_a_new_model_with_the_same_evaluation_runs_to_the_end_and_converges(finished, tmp_path, generate_python):
    """The evaluation writes the same bytes: given its old time back it would rerun forever (issue 54, case 2)."""
    project, _ = with_new_content(finished, tmp_path, generate_python, ["model"])
    check_runs_converge(project, tmp_path, generate_python)
    evaluation = "mathematics/eval/tp_transformer-s1.csv"
    assert (project.root / evaluation).read_bytes() == (finished.root / evaluation).read_bytes()


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
    """`cp -r` without times: outputs and the report's captions (no job writes them) get their times back."""
    check_nothing_planned(finished.copy(tmp_path / "project", keep_times=False), generate_python)


DAMAGED_LEDGERS = {"truncated": b'{"data/vocab.json": {"dig', "list": b"[1, 2, 3]",
                   "entry": b'{"data/vocab.json": "a string"}'}


def test_a_lost_or_damaged_ledger_plans_nothing(finished, tmp_path, generate_python):
    """The ledger only gives times back (DVC never reads it): lost, or damaged in any way, Snakemake plans nothing;
    a damaged one is named and started again (issue 54, case 3)."""
    project = finished.copy(tmp_path / "project")
    path = project.root / ".snakemake/tprepro/output_times.json"
    for name, damaged in DAMAGED_LEDGERS.items():
        path.write_bytes(damaged)
        out = snakemake(project.root, generate_python, "-n")
        named = "unreadable" if name == "truncated" else "not a ledger"
        assert NOTHING in out and f"{path.relative_to(project.root)}: {named}" in out, (name, out[-2000:])
    path.unlink()
    check_nothing_planned(project, generate_python)


def test_an_older_experiment_applied_is_up_to_date_for_both_tools(finished, tmp_path, generate_python):
    """`dvc exp save -n baseline; dvc exp run -S train.steps=…`, both compared as README says, `dvc exp apply
    baseline`, then `dvc repro` and Snakemake: both complete with the baseline's tables, byte for byte, and nothing
    to do (issue 54, case 1: the evaluations' digests came back with them, where the tables stage refused them and
    DVC deleted Table 1)."""
    project = finished.copy(tmp_path / "project")
    root, steps = project.root, project.params["train"]["steps"]
    tables = {path: path.read_bytes() for path in sorted((root / "results/tables").glob("table1.*"))}
    dvc(root, generate_python, "exp", "save", "-n", "baseline")
    baseline = json.loads((root / "results/metrics.json").read_text())
    dvc(root, generate_python, "exp", "run", "-n", "longer", "-S", f"train.steps={steps + 6}")
    longer = json.loads((root / "results/metrics.json").read_text())
    assert (root / "results/tables/table1.csv").read_bytes() != tables[root / "results/tables/table1.csv"]
    check_experiments_compared(root, generate_python, {"baseline": (baseline, steps), "longer": (longer, steps + 6)})

    dvc(root, generate_python, "exp", "apply", "baseline")  # its numbers, settings and models back
    shown = json.loads(dvc(root, generate_python, "metrics", "show", "--json").strip().splitlines()[-1])
    assert shown[""]["data"]["results/metrics.json"]["data"] == baseline
    assert yaml.safe_load((root / "params.yaml").read_text())["train"]["steps"] == steps
    assert json.loads((root / "mathematics/models/transformer-s1/train_metrics.json").read_text())["steps"] == steps
    dvc(root, generate_python, "repro")
    assert {path: path.read_bytes() for path in tables} == tables
    assert dvc_plans(root, generate_python) == set()
    assert NOTHING in snakemake(root, generate_python)
    assert {path: path.read_bytes() for path in tables} == tables


def check_experiments_compared(root: Path, generate_python, runs: dict[str, tuple[dict, int]]) -> None:
    """Two experiments (name: their metrics and steps; the first the older) compared as a DVC user does (README
    "Comparing runs"): each keeps its own numbers and learning curve, in `dvc exp show`, README's `tprepro compare`
    line, `dvc metrics diff` and `dvc plots diff`."""
    (older, (old, old_steps)), (newer, (new, new_steps)) = runs.items()
    shown = json.loads(dvc(root, generate_python, "exp", "show", "--json").strip().splitlines()[-1])
    rows = {rev.get("name") or rev["rev"]: rev for commit in shown
            for rev in [commit, *[r for e in commit.get("experiments") or [] for r in e["revs"]]]}
    for name, (metrics, _) in runs.items():  # both rows have their own numbers
        assert rows[name]["data"]["metrics"]["results/metrics.json"]["data"] == metrics, name

    view = run([sys.executable, "-m", "tprepro", *readme_compare_line()[1:]], root, generate_python).splitlines()
    view = [line for line in view if not line.startswith("WARNING")]  # tprepro's own, for the copied checkout
    assert {older, newer} <= set(view[0].split()), view[0]  # a column per experiment
    names = {line.split()[0] for line in view[1:]}
    assert {"mathematics.train_loss.transformer", "mathematics.interpolation_acc.transformer",
            "two_variable.overall_acc.ut", "train.steps"} <= names, view  # headlines, the setting that differs
    assert "train.batch_size" not in names and not [name for name in names if "/" in name], view  # only what differs
    assert max(map(len, view)) <= 160, "\n".join(view)  # README's line in a 160-column terminal

    diff = json.loads(dvc(root, generate_python, "metrics", "diff", older, "--json").strip().splitlines()[-1])
    loss = diff["results/metrics.json"]["mathematics.train_loss.transformer"]
    assert (loss["old"], loss["new"]) == (old["mathematics"]["train_loss"]["transformer"],
                                          new["mathematics"]["train_loss"]["transformer"])
    curve = "mathematics/models/transformer-s1/learning_curve.csv"
    plots = json.loads(dvc(root, generate_python, "plots", "diff", older, "--json", "--targets", curve
                           ).strip().splitlines()[-1])["data"][curve]
    points = [(point["rev"], int(point["step"])) for plot in plots for point in plot["content"]["data"]["values"]]
    assert {rev for rev, _ in points} == {older, "workspace"}  # two curves, each to its own last step
    assert max(step for rev, step in points if rev == older) == old_steps < max(step for _, step in points) == new_steps
    dvc(root, generate_python, "plots", "diff", older)  # the page, as README's line writes it
    assert (root / "dvc_plots/index.html").is_file()
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], root, generate_python)
    assert "dvc_plots" not in status, status  # README's `git add -A` would not commit it
