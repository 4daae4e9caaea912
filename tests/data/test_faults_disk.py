"""Process and disk faults done for real (issue 10): kill -9 and SIGTERM to a process group during the
data stage, a full and a read-only file system (a tiny tmpfs), a file-size limit, and several outputs
that must be replaced together or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import arithmetic_rows, load_default_params, tool_env, write_dataset, write_params
from tprepro.data.shards import open_dataset
from tprepro.errors import TpreproError
from tprepro.io import atomic_directory, atomic_files, atomic_path, atomic_write_text

MODULE = "arithmetic__add_or_sub"


# ---- processes -------------------------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, ...
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def group_members(pgid: int) -> list[int]:
    """Live processes of process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split() if stat else []
        if fields and int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"gave up waiting for {what} after {timeout:.0f}s")


def start_long_data_stage(tmp_path, generate_python) -> tuple[subprocess.Popen, Path]:
    """`tprepro data` on a dataset far too big to finish, in its own process group."""
    params = load_default_params()
    params["data"].update(train_per_module=1_000_000, rows_per_shard=20)
    path = write_params(tmp_path / "params.yaml", params)
    out = tmp_path / "data" / "train-easy" / MODULE
    process = subprocess.Popen(
        [sys.executable, "-m", "tprepro", "data", "--params", str(path), "--split", "train-easy",
         "--module", MODULE, "--out", str(out), "--processes", "1"],
        cwd=tmp_path, env=tool_env(TPREPRO_GENERATE_PYTHON=generate_python), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return process, out


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.mark.slow  # the real generator in the generation venv
def test_kill_9_of_tprepro_data_kills_its_generator_child(tmp_path, generate_python):
    process, out = start_long_data_stage(tmp_path, generate_python)
    try:
        child = wait_for(lambda: children(process.pid), 60, "the generator child")[0]
        assert "tprepro.experiments.mathematics.data_stage" in Path(f"/proc/{child}/cmdline").read_text()
        wait_for(lambda: list(out.parent.glob(f".{MODULE}.resume/part-*.json")), 120, "a first finished shard")
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        wait_for(lambda: not alive(child), 10, f"the generator child {child} to die with its parent")
        # Its forkserver, workers and resource tracker follow (their pipes to the child close).
        wait_for(lambda: not group_members(process.pid), 30, "every process the stage started to exit")
        assert not out.exists()
    finally:
        kill_group(process)


@pytest.mark.slow  # the real generator in the generation venv, twice
def test_after_sigterm_to_the_group_a_rerun_under_other_settings_discards_the_kept_shards(tmp_path, generate_python):
    process, out = start_long_data_stage(tmp_path, generate_python)
    try:
        wait_for(lambda: list(out.parent.glob(f".{MODULE}.resume/part-*.json")), 120, "a first finished shard")
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) != 0
    finally:
        kill_group(process)
    kept = out.parent / f".{MODULE}.resume"
    assert list(kept.glob("part-*.parquet")) and not out.exists()  # finished shards kept, no dataset
    params = load_default_params()
    params["data"].update(train_per_module=30, rows_per_shard=20)
    path = write_params(tmp_path / "small.yaml", params)
    rerun = subprocess.run(
        [sys.executable, "-m", "tprepro", "data", "--params", str(path), "--split", "train-easy",
         "--module", MODULE, "--out", str(out)],
        cwd=tmp_path, env=tool_env(TPREPRO_GENERATE_PYTHON=generate_python), capture_output=True, text=True,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"discarded {kept}" in rerun.stdout + rerun.stderr  # its shards were made under other settings
    assert not list(out.parent.glob(f".{MODULE}.*")), "stale temporary directories remain"
    assert open_dataset(out).rows == 30


def test_a_kill_between_the_two_renames_restores_the_finished_dataset(tmp_path):
    """The window of atomic_directory's swap, done for real in a process killed with SIGKILL."""
    target = write_dataset(tmp_path / "d", arithmetic_rows(40, seed=1), rows_per_shard=20)
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        target = Path({str(target)!r})
        os.replace(target, target.with_name(".d.old"))  # the first rename of the swap ...
        os.kill(os.getpid(), signal.SIGKILL)            # ... and the process dies before the second
    """)
    assert subprocess.run([sys.executable, "-c", script]).returncode == -signal.SIGKILL
    assert not target.exists()
    with atomic_directory(target) as tmp:  # the next writer restores, then replaces as usual
        assert open_dataset(target).rows == 40
        write_dataset(tmp, arithmetic_rows(60, seed=2), rows_per_shard=20)
    assert open_dataset(target).rows == 60
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


# ---- disks -----------------------------------------------------------------------------------------------

@pytest.fixture
def tiny_fs(tmp_path):
    """A 256 KiB tmpfs (needs root and mount permission; else the test is skipped, saying why)."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip()}); "
                    "test_a_file_size_limit_names_the_file covers a failing write without one")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_disk_full_names_the_file_and_keeps_the_finished_one(tiny_fs):
    target = tiny_fs / "results.txt"
    atomic_write_text(target, "finished\n")
    with pytest.raises(TpreproError, match=rf"{target}: cannot write \(No space left on device\)"):
        atomic_write_text(target, "x" * 1_000_000)
    assert target.read_text() == "finished\n"
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["results.txt"]  # no temporary file left


def test_disk_full_while_writing_shards_names_the_dataset_and_keeps_the_old_one(tiny_fs):
    old = write_dataset(tiny_fs / "d", arithmetic_rows(40, seed=1), rows_per_shard=20)
    rows = [{**row, "question": row["question"] + os.urandom(200).hex()} for row in arithmetic_rows(2000, seed=2)]
    with pytest.raises(TpreproError, match="No space left on device"):
        with atomic_directory(old) as tmp:
            write_dataset(tmp, rows, rows_per_shard=100)
    assert open_dataset(old).rows == 40
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["d"]


def test_a_read_only_file_system_names_the_file(tiny_fs):
    target = tiny_fs / "table.csv"
    atomic_write_text(target, "a,b\n")
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)
    with pytest.raises(TpreproError, match=rf"{target}: cannot write \(Read-only file system\)"):
        atomic_write_text(target, "c,d\n")
    assert target.read_text() == "a,b\n"


def test_a_file_size_limit_names_the_file(tmp_path):
    """RLIMIT_FSIZE (no root needed): the write fails with EFBIG in a real child process."""
    target = tmp_path / "model.bin"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from tprepro.errors import TpreproError
        from tprepro.io import atomic_path
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            with atomic_path({str(target)!r}) as tmp:
                tmp.write_bytes(b"x" * 100_000)
        except TpreproError as exc:
            print(exc)
            sys.exit(3)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=tool_env())
    assert result.returncode == 3, result.stderr[-2000:]
    assert f"{target}: cannot write (File too large)" in result.stdout
    assert not target.exists() and not list(tmp_path.iterdir())


def test_a_checkpoint_past_the_file_size_limit_names_the_file_and_leaves_none(tmp_path):
    """Before issue 25 torch wrote the checkpoint itself and failed with `RuntimeError: [enforce fail at
    inline_container.cc] unexpected pos`, naming neither file nor cause."""
    target = tmp_path / "checkpoint.pt"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        import torch
        from tprepro.errors import TpreproError
        from tprepro.train.checkpoint import save_checkpoint
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        try:
            save_checkpoint({{"step": 3, "model": {{"w": torch.ones(100_000)}}}}, {str(target)!r})
        except TpreproError as exc:
            print(exc)
            sys.exit(3)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=tool_env())
    assert result.returncode == 3, result.stderr[-2000:]
    assert result.stdout.strip() == f"{target}: cannot write (File too large)"
    assert not list(tmp_path.iterdir())


def test_several_outputs_are_replaced_together_or_not_at_all(tiny_fs):
    table, figure = tiny_fs / "tables" / "table1.csv", tiny_fs / "figures" / "fig.png"
    with atomic_files({"table": table, "figure": figure}) as tmp:
        atomic_write_text(tmp["table"], "old table\n")
        atomic_path_write(tmp["figure"], b"old figure")
    # The new table fits, the new figure does not: neither replaces the finished pair.
    with pytest.raises(TpreproError, match="No space left on device"):
        with atomic_files({"table": table, "figure": figure}) as tmp:
            atomic_write_text(tmp["table"], "new table\n")
            atomic_path_write(tmp["figure"], os.urandom(1_000_000))
    assert table.read_text() == "old table\n" and figure.read_bytes() == b"old figure"
    with atomic_files({"table": table, "figure": figure}) as tmp:
        atomic_write_text(tmp["table"], "new table\n")
        atomic_path_write(tmp["figure"], b"new figure")
    assert table.read_text() == "new table\n" and figure.read_bytes() == b"new figure"
    assert sorted(p.name for p in tiny_fs.rglob("*")) == ["fig.png", "figures", "table1.csv", "tables"]


def test_an_output_never_written_replaces_nothing(tmp_path):
    table, figure = tmp_path / "table.csv", tmp_path / "fig.png"
    table.write_text("old\n")
    with pytest.raises(TpreproError, match=rf"{figure}: not written"):
        with atomic_files({"table": table, "figure": figure}) as tmp:
            atomic_write_text(tmp["table"], "new\n")
    assert table.read_text() == "old\n" and not figure.exists()


def atomic_path_write(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def test_atomic_writes_fsync_the_file_before_the_rename_and_the_directory_after(tmp_path):
    """strace records the real system calls of a real write."""
    target = tmp_path / "out.txt"
    script = f"from tprepro.io import atomic_write_text; atomic_write_text({str(target)!r}, 'data')"
    trace = tmp_path / "trace"
    result = subprocess.run(["strace", "-f", "-e", "trace=fsync,rename,renameat,renameat2,openat", "-o", str(trace),
                             sys.executable, "-c", script], capture_output=True, text=True, env=tool_env())
    if result.returncode == 127 or "not found" in result.stderr or not trace.exists():
        pytest.skip(f"strace is not usable here ({result.stderr.strip()[:200]})")
    lines = [line for line in trace.read_text().splitlines() if str(tmp_path) in line or "fsync(" in line]
    calls = []
    fds = {}
    for line in lines:
        body = line.split(None, 1)[1]
        if body.startswith("openat(") and "= " in body and not body.rstrip().endswith("ENOENT"):
            fd = body.rsplit("= ", 1)[1].split()[0]
            fds[fd] = body.split('"')[1]
        elif body.startswith("fsync("):
            calls.append(("fsync", fds.get(body[6:body.index(")")])))
        elif body.startswith("rename"):
            calls.append(("rename", body.split('"')[3]))
    rename = calls.index(("rename", str(target)))
    assert any(kind == "fsync" and path and Path(path).name.startswith(".out.txt.") for kind, path in calls[:rename])
    assert ("fsync", str(tmp_path)) in calls[rename:]
