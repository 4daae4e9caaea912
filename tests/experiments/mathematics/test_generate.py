"""Generation with the real mathematics_dataset generator (in the generation interpreter)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tprepro.experiments.mathematics import data_stage as stage, modules
from tprepro.data.resume import resume_folder
from tprepro.data.shards import SCHEMA, iter_rows, open_dataset, shard_name, write_manifest, write_shard
from tprepro.experiments.mathematics.data_stage import run_data_stage
from tprepro.errors import TpreproError

from helpers import REPO

SRC = REPO / "src"
CONFIG = {"source": "generate", "release_root": None, "seed": 1,
          "train_per_module": 30, "test_per_module": 30, "rows_per_shard": 10}  # fmt: skip
# A composed module (entity sets, variable letters) on a train split, a plain
# module on interpolate and an extrapolation-only module.
CASES = [
    ("train-medium", "numbers__gcd_composed"),
    ("interpolate", "arithmetic__add_or_sub"),
    ("extrapolate", "numbers__place_value_big"),
]
COLUMNS = tuple(SCHEMA.names)


def _stage(generate_python, split, module, out, *, hash_seed, processes=1, **overrides):
    """run_data_stage from this (torch) interpreter, so it re-runs in the generation one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
        patch.setenv("PYTHONHASHSEED", str(hash_seed))
        run_data_stage(split, module, out, {**CONFIG, **overrides}, processes=processes)


def _run_python(generate_python, code, *args, hash_seed="random"):
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONHASHSEED": hash_seed}
    return subprocess.run(
        [generate_python, "-c", textwrap.dedent(code), *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def generated(generate_python, tmp_path_factory):
    """Each case generated twice: hash seed 1 with 1 process, hash seed 2 with 2 processes."""
    root = tmp_path_factory.mktemp("generated")
    runs = {}
    for split, module in CASES:
        a, b = root / f"{split}-{module}-a", root / f"{split}-{module}-b"
        _stage(generate_python, split, module, a, hash_seed=1, processes=1)
        _stage(generate_python, split, module, b, hash_seed=2, processes=2)
        runs[split, module] = (a, b)
    return runs


@pytest.mark.parametrize(("split", "module"), CASES)
def test_identical_bytes_across_hash_seeds_and_process_counts(generated, split, module):
    a, b = generated[split, module]
    assert _files(a) == _files(b)
    assert open_dataset(a, verify=True).fingerprint() == open_dataset(b, verify=True).fingerprint()


@pytest.mark.parametrize(("split", "module"), CASES)
def test_rows_and_manifest(generated, split, module):
    dataset = open_dataset(generated[split, module][0], verify=True)
    assert dataset.rows == 30
    assert [s["rows"] for s in dataset.manifest["shards"]] == [10, 10, 10]
    assert {k: dataset.manifest[k] for k in ("split", "module", "seed", "source", "generator")} == {
        "split": split, "module": module, "seed": 1, "source": "generate",
        "generator": "mathematics_dataset==1.0.1",
    }  # fmt: skip
    rows = list(iter_rows(dataset, columns=COLUMNS))
    assert all(set(r) == set(COLUMNS) and all(isinstance(v, str) for v in r.values()) for r in rows)
    assert {(r["split"], r["module"], r["difficulty"]) for r in rows} == {
        (split, module, modules.difficulty_of(split))
    }
    assert all(0 < len(r["question"]) <= 160 and 0 < len(r["answer"]) <= 30 for r in rows)


def test_composed_questions_use_composition(generated):
    rows = list(iter_rows(open_dataset(generated["train-medium", "numbers__gcd_composed"][0])))
    assert any(r["question"].startswith(("Let ", "Suppose ")) for r in rows)


def test_shards_and_seeds_differ(generate_python, generated, tmp_path):
    first = generated["interpolate", "arithmetic__add_or_sub"][0]
    shards = [[r["question"] for r in iter_rows(open_dataset(first))][i : i + 10] for i in (0, 10, 20)]
    assert len({tuple(s) for s in shards}) == 3
    other = tmp_path / "seed2"
    _stage(generate_python, "interpolate", "arithmetic__add_or_sub", other, hash_seed=1, seed=2)
    questions = [{r["question"] for r in iter_rows(open_dataset(d))} for d in (first, other)]
    assert len(questions[0] & questions[1]) < 5


def test_module_lists_match_package(generate_python):
    code = """
        import json
        from absl import flags
        flags.FLAGS.mark_as_parsed()
        from mathematics_dataset import generate
        from mathematics_dataset.modules import modules
        names = lambda tree: list(generate._filter_and_flatten(tree))
        train = [names(modules.train(generate._make_entropy_fn(level, 3))) for level in range(3)]
        print(json.dumps({"train": train, "interpolate": names(modules.test()),
                          "extrapolate": names(modules.test_extra())}))
    """
    result = _run_python(generate_python, code)
    assert result.returncode == 0, result.stderr
    lists = json.loads(result.stdout)
    assert lists["train"] == [list(modules.TRAIN_MODULES)] * 3
    assert lists["interpolate"] == list(modules.INTERPOLATE_MODULES)
    assert lists["extrapolate"] == list(modules.EXTRAPOLATE_MODULES)
    assert len(modules.TRAIN_MODULES) == 56 and len(modules.EXTRAPOLATE_MODULES) == 15


def test_determinism_fixes_in_place(generate_python):
    """Each patch does what the determinism section of generate.py claims."""
    code = """
        import random, sys
        import tprepro.experiments.mathematics.generate as g
        g._import_package()
        import sympy
        from mathematics_dataset.util import composition
        assumptions = sys.modules["sympy.core.assumptions"]

        def query(name):
            x = sympy.Symbol(name, integer=True)
            return (2 * x + 1).is_odd, (x**2 + 3).is_positive

        state = random.getstate()
        query("fresh_a")
        assert random.getstate() == state, "sympy assumptions touched the global random stream"
        patched, assumptions.shuffle = assumptions.shuffle, random.shuffle
        query("fresh_b")
        assert random.getstate() != state, "unpatched sympy should consume global random"
        assumptions.shuffle = patched

        g._reset_state(7)
        one = sympy.Integer(1)
        entities = [composition.Entity(context=composition.Context(), value=one, handle=one) for _ in range(3)]
        assert [hash(e) for e in entities] == [0, 1, 2]
        print(sympy.Dummy._base_dummy_index)
    """
    first = _run_python(generate_python, code, hash_seed="0")
    second = _run_python(generate_python, code, hash_seed="0")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout, "Dummy indices depend on import-time entropy"


def test_shard_independent_of_earlier_shards_in_same_process(generate_python):
    """Even without a fresh fork per shard, a shard does not depend on what ran before it.

    Without the sympy shuffle fix both modules fail this (assumption memos leak).
    """
    code = """
        import tprepro.experiments.mathematics.generate as g
        for module in ("algebra__linear_1d", "numbers__gcd_composed"):
            shard = lambda i: g._generate_shard(("train-medium", module, 1, i, 10, 0))
            fresh = shard(2)
            shard(0), shard(1)
            assert shard(2) == fresh, module
    """
    result = _run_python(generate_python, code, hash_seed="0")
    assert result.returncode == 0, result.stderr


def test_worker_refuses_random_hash_seed(generate_python):
    code = """
        import tprepro.experiments.mathematics.generate as g
        g._generate_shard(("interpolate", "arithmetic__add_or_sub", 1, 0, 1, 0))
    """
    result = _run_python(generate_python, code, hash_seed="123")
    assert result.returncode != 0
    assert "PYTHONHASHSEED=0" in result.stderr


GENERATE = """
    import sys
    from pathlib import Path
    import tprepro.experiments.mathematics.generate as g
    g.generate_dataset("train-easy", "arithmetic__add_or_sub", Path(sys.argv[1]), seed=int(sys.argv[2]),
                       count=int(sys.argv[3]), rows_per_shard=10, processes=2)
"""


def _generate(generate_python, out: Path, seed: int = 1, count: int = 30) -> subprocess.CompletedProcess:
    result = _run_python(generate_python, GENERATE, out, seed, count)
    assert result.returncode == 0, result.stderr
    return result


def _kept(out: Path) -> list[str]:
    """The shards an interrupted job writing `out` kept (their records)."""
    return sorted(p.name for p in resume_folder(out).glob("*.json") if p.name != "job.json")


@pytest.mark.parametrize("existing", [False, True])
def test_an_interrupted_run_keeps_its_finished_shards_and_a_rerun_makes_only_the_rest(generate_python, tmp_path,
                                                                                      existing):
    out = tmp_path / "out"
    if existing:
        row = {"question": "q", "answer": "a", "module": "m", "split": "s", "difficulty": "d"}
        write_shard([row], out / shard_name(0))
        write_manifest(out, [out / shard_name(0)])
    before = _files(out) if existing else None
    result = _run_python(generate_python, """
        import sys
        from pathlib import Path
        import tprepro.data.resume as resume
        import tprepro.experiments.mathematics.generate as g
        real, calls = resume.write_shard, []

        def flaky(rows, path, schema):
            calls.append(path)
            if len(calls) == 2:
                raise RuntimeError("simulated crash")
            real(rows, path, schema)

        resume.write_shard = flaky
        g.generate_dataset("train-easy", "arithmetic__add_or_sub", Path(sys.argv[1]),
                           seed=1, count=30, rows_per_shard=10, processes=2)
    """, out)
    assert result.returncode != 0 and "simulated crash" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.resume", *(["out"] if existing else [])]
    if existing:
        assert _files(out) == before  # the finished output is untouched
    assert len(_kept(out)) == 1
    rerun = _generate(generate_python, out)
    assert "1 of 3 shards kept from an interrupted earlier run" in rerun.stderr
    _generate(generate_python, tmp_path / "uninterrupted")
    assert _files(out) == _files(tmp_path / "uninterrupted")
    assert not resume_folder(out).exists()


def test_kept_shards_of_other_settings_or_with_other_bytes_are_made_again(generate_python, tmp_path):
    out, reference = tmp_path / "out", tmp_path / "reference"
    _generate(generate_python, reference, seed=2)
    kept = resume_folder(out)
    kept.mkdir()
    (kept / "job.json").write_text(json.dumps({"seed": 1}))  # another job's folder: discarded
    write_shard([{"question": "q", "answer": "a", "module": "m", "split": "s", "difficulty": "d"}], kept / shard_name(0))
    (kept / shard_name(0)).with_suffix(".json").write_text(json.dumps({"index": 0, "sha256": "0" * 64, "notes": {"errors": 0}}))
    result = _generate(generate_python, out, seed=2)
    assert "kept from an interrupted" not in result.stderr
    assert _files(out) == _files(reference)


@pytest.mark.slow
def test_a_data_job_killed_with_sigkill_resumes_to_the_same_bytes(generate_python, tmp_path):
    """kill -9 of the job (its generator workers follow it) mid-run; one kept shard is then truncated: the rerun
    makes that one and the unfinished ones, and the dataset is the uninterrupted run's, byte for byte."""
    out, count = tmp_path / "out", 400
    job = subprocess.Popen([generate_python, "-c", textwrap.dedent(GENERATE), str(out), "1", str(count)],
                           env={**os.environ, "PYTHONPATH": str(SRC)}, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_kept(out)) < 4 and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.05)
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        job.wait()
    kept = _kept(out)
    assert 4 <= len(kept) < count // 10, kept
    assert not out.exists()
    damaged = resume_folder(out) / kept[0].replace(".json", ".parquet")
    damaged.write_bytes(damaged.read_bytes()[:100])
    rerun = _generate(generate_python, out, count=count)
    assert f"{len(kept) - 1} of {count // 10} shards kept" in rerun.stderr
    _generate(generate_python, tmp_path / "uninterrupted", count=count)
    assert _files(out) == _files(tmp_path / "uninterrupted")


def test_unknown_module_or_split(tmp_path):
    with pytest.raises(TpreproError, match="unknown module 'numbers__gcd_big' for split 'interpolate'"):
        run_data_stage("interpolate", "numbers__gcd_big", tmp_path / "out", CONFIG)
    with pytest.raises(TpreproError, match="unknown split 'train-insane'"):
        run_data_stage("train-insane", "numbers__gcd", tmp_path / "out", CONFIG)
    assert list(tmp_path.iterdir()) == []


def test_child_reports_unknown_module(generate_python, tmp_path):
    command = [generate_python, "-m", "tprepro.experiments.mathematics.data_stage", "--split", "extrapolate", "--module",
               "numbers__gcd", "--out", str(tmp_path / "out"), "--config-json", json.dumps(CONFIG)]  # fmt: skip
    result = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, text=True)
    assert result.returncode == 1
    assert "error: unknown module 'numbers__gcd' for split 'extrapolate'" in result.stderr


def test_child_failure_is_reported(generate_python, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    with pytest.raises(TpreproError, match=r"exited with status 1") as exc:
        run_data_stage("interpolate", "arithmetic__add_or_sub", blocker / "out", CONFIG)
    assert f"{blocker / 'out'}: cannot write (" in str(exc.value)  # the OSError names the output


def test_child_error_message_and_status_propagate(tmp_path, monkeypatch):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'some warning' >&2\necho 'error: data.seed: boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", str(fake))
    with pytest.raises(TpreproError, match=r"^data\.seed: boom \(generation interpreter .* exited with status 3\)$"):
        run_data_stage("interpolate", "arithmetic__add_or_sub", tmp_path / "out", CONFIG)


def test_missing_generation_interpreter(tmp_path, monkeypatch):
    monkeypatch.setattr(stage, "can_generate_here", lambda: False)
    monkeypatch.delenv("TPREPRO_GENERATE_PYTHON", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TpreproError, match=r"make install.*TPREPRO_GENERATE_PYTHON"):
        run_data_stage("interpolate", "arithmetic__add_or_sub", tmp_path / "out", CONFIG)
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(TpreproError, match=r"TPREPRO_GENERATE_PYTHON=.*nope/python"):
        run_data_stage("interpolate", "arithmetic__add_or_sub", tmp_path / "out", CONFIG)


@pytest.mark.parametrize(
    ("key", "value"),
    [("source", "download"), ("rows_per_shard", 0), ("seed", "1"), ("test_per_module", True)],
)
def test_bad_config_names_key(tmp_path, key, value):
    with pytest.raises(TpreproError, match=rf"data\.{key}: "):
        run_data_stage("interpolate", "arithmetic__add_or_sub", tmp_path / "out", {**CONFIG, key: value})


# arithmetic__add_sub_multiple_longer's extrapolate split under seed 1: the generator's own
# `assert sample_args.entropy == 0` fires within the first 500 draws (the paper grid's data job that
# always failed before raising draws were redrawn).
RAISING = ("extrapolate", "arithmetic__add_sub_multiple_longer")


def test_raising_draws_are_redrawn_and_counted(generate_python, tmp_path):
    split, module = RAISING
    a, b = tmp_path / "a", tmp_path / "b"
    _stage(generate_python, split, module, a, hash_seed=1, processes=1, test_per_module=500, rows_per_shard=250)
    _stage(generate_python, split, module, b, hash_seed=2, processes=2, test_per_module=500, rows_per_shard=250)
    assert _files(a) == _files(b)  # the redraw continues the shard's own streams: a function of its seed
    manifest = open_dataset(a).manifest
    assert manifest["rows"] == 500
    assert len(manifest["generator_errors"]) == 2 and sum(manifest["generator_errors"]) >= 1


def test_a_generator_that_keeps_raising_fails_with_its_own_traceback(generate_python, tmp_path):
    split, module = RAISING
    result = _run_python(generate_python, """
        import sys
        from tprepro.experiments.mathematics.generate import generate_dataset
        generate_dataset(sys.argv[1], sys.argv[2], sys.argv[3], seed=1, count=500, rows_per_shard=500, error_rate=0)
    """, split, module, tmp_path / "out", hash_seed="0")
    assert result.returncode != 0
    assert f"{split}/{module} shard 0: the generator raised on 1 draws" in result.stderr
    assert "mathematics_dataset/sample/arithmetic.py" in result.stderr and "AssertionError" in result.stderr
    assert not (tmp_path / "out").exists()


def test_stage_error_keeps_the_lines_after_the_message():
    stderr = "warming up\nerror: shard 0: the generator raised\nTraceback (most recent call last):\n  File \"x.py\"\nAssertionError\n"
    assert stage._reported_error(stderr) == ("shard 0: the generator raised\nTraceback (most recent call last):\n"
                                             "  File \"x.py\"\nAssertionError")
    assert stage._reported_error("a\nb\n") == "a\nb"


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_data_job_leaves_no_generator_worker(generate_python, tmp_path, signum):
    """A real `tprepro data` (torch interpreter -> generation interpreter -> forkserver -> worker), signalled
    while its worker samples a slow module: every process below it is gone within seconds."""
    config = {**CONFIG, "train_per_module": 100000, "rows_per_shard": 100000}  # minutes of work for one worker
    code = "import json, sys; from pathlib import Path; from tprepro.experiments.mathematics.data_stage import " \
           "run_data_stage as r; r('train-hard', 'probability__swr_p_level_set', Path(sys.argv[1]), json.loads(sys.argv[2]))"
    job = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "out"), json.dumps(config)],
                           env={**os.environ, "TPREPRO_GENERATE_PYTHON": generate_python}, stderr=subprocess.PIPE,
                           # as from a terminal: pytest-xdist's workers ignore SIGINT, and a child would inherit that
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    below: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(below := _descendants(job.pid)) < 3 and time.monotonic() < deadline:  # interpreter, forkserver, worker
            time.sleep(0.2)
        assert len(below) >= 3, f"the generator's processes did not start: {below}"
        time.sleep(1)  # the worker is sampling
        job.send_signal(signum)
        job.wait(timeout=30)
        deadline = time.monotonic() + 15
        while (left := [pid for pid in below if _alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, f"processes left running after {signum.name}: {left}"
        assert not (tmp_path / "out").exists()
    finally:
        job.kill()
        job.wait()
        for pid in below:  # a failed check leaves nothing running either
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_data_job_generates_with_the_cpus_slurm_gave_it(monkeypatch):
    import argparse

    from tprepro.experiments.mathematics.cli import _processes, data_processes

    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    assert data_processes(_processes("auto")) == 1  # a workstation job: one process (Snakemake runs jobs side by side)
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "6")  # cluster.data.cpus, or the plan's where that is null
    assert data_processes(_processes("auto")) == 6
    assert data_processes(_processes("3")) == 3
    for bad in ("0", "-1", "two"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integer or auto"):
            _processes(bad)
