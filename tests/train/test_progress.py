"""`tprepro status` reads real training jobs' progress logs (logs/progress/<experiment>/<job>.log, which
every training writes whatever its stderr is): a running job's step, total, steps/s and time left, a
finished job as finished, and how to follow a job with `tail -f`; trainings launched as Snakemake,
`dvc repro > file 2>&1`, nohup and a pipe route their stderr are each seen once."""

import os
import re
import subprocess
import sys
import time

import pytest

from helpers import tool_env
from training_project import dvc_training_project, make_workspace, train_command

pytestmark = pytest.mark.slow  # training subprocesses; the running one until its first progress line (~30 s)

PROGRESS = "logs/progress/tprepro-mathematics"


def status(root, *args) -> str:
    result = subprocess.run([sys.executable, "-m", "tprepro", "status", "--logs", "logs", *args], cwd=root,
                            env=tool_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_status_shows_a_running_jobs_step_rate_and_time_left_and_a_finished_one(tmp_path):
    workspace = make_workspace(tmp_path / "ws", steps=20, log_every=5, checkpoint_every=10)
    logs = workspace / "logs" / "train"
    logs.mkdir(parents=True)
    assert "no training job in progress under logs/progress/ (0 finished)" in status(workspace)

    with open(logs / "done-s2.log", "w") as log:  # a job run to its end, its stderr a Snakemake job log
        subprocess.run(train_command(workspace, workspace / "done", seed=2), cwd=workspace, env=tool_env(),
                       stdout=log, stderr=subprocess.STDOUT, check=True, timeout=600)
    make_workspace(tmp_path / "long", steps=1_000_000, log_every=5, checkpoint_every=1000)
    running_log = logs / "transformer-s1.log"
    with open(running_log, "w") as log:
        job = subprocess.Popen(train_command(tmp_path / "long", workspace / "running"), cwd=workspace,
                               env=tool_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        started = status(workspace)
        deadline = time.monotonic() + 300
        while " steps/s" not in running_log.read_text():  # ProgressBar's first line after ~30 s
            assert job.poll() is None, running_log.read_text()[-3000:]
            assert time.monotonic() < deadline, running_log.read_text()[-3000:]
            if "transformer-s1: step 0/1000000" not in started:
                started = status(workspace)  # the start line is there before the first step line
            time.sleep(1)
        shown = status(workspace)
    finally:
        job.kill()
        job.wait()
    assert "transformer-s1: step 0/1000000 (0%), no rate yet" in started, started
    line = next(line for line in shown.splitlines() if line.startswith("transformer-s1:"))
    assert re.fullmatch(r"transformer-s1: step \d+/1000000 \(\d+%\), [\d.]+ steps/s, about [\d.]+ min left, "
                        rf"as of \d+ min \d+ s ago  \[{PROGRESS}/transformer-s1.log\]", line), line
    assert "transformer-s2" not in shown and "1 in progress, 1 finished" in shown
    assert f"tail -f {PROGRESS}/transformer-s1.log" in shown
    everything = status(workspace, "--all")
    assert re.search(rf"^transformer-s2: finished at step 20/20 \(100%\), as of .*\[{PROGRESS}/transformer-s2\.log\]$",
                     everything, flags=re.M), everything


def test_status_sees_every_training_however_its_stderr_is_routed(tmp_path):
    """`dvc repro > dvc.log 2>&1` (stderr a regular file, issue 54: status said "no training job in progress"),
    nohup from a terminal (stderr to nohup.out), a pipe (DVC's own) and a Snakemake job log: each training
    is listed once, from its progress log."""
    root = dvc_training_project(tmp_path / "project", seed=1, steps=6, log_every=3, checkpoint_every=6)
    subprocess.run("dvc repro > dvc.log 2>&1", shell=True, cwd=root, env=tool_env(), check=True, timeout=600)
    assert "finished: step 6" in (root / "dvc.log").read_text()

    terminal, console = os.openpty()  # nohup sends a terminal's output to nohup.out
    try:
        subprocess.run(["nohup", *train_command(root, root / "nohup", seed=2)], cwd=root, env=tool_env(),
                       stdin=subprocess.DEVNULL, stdout=console, stderr=console, check=True, timeout=600)
    finally:
        os.close(terminal)
        os.close(console)
    assert "finished: step 6" in (root / "nohup.out").read_text()

    subprocess.run(train_command(root, root / "piped", seed=3), cwd=root, env=tool_env(), capture_output=True,
                   check=True, timeout=600)
    (root / "logs/train").mkdir(parents=True)
    with open(root / "logs/train/transformer-s4.log", "w") as log:
        subprocess.run(train_command(root, root / "snakemake", seed=4), cwd=root, env=tool_env(), stdout=log,
                       stderr=subprocess.STDOUT, check=True, timeout=600)

    everything = status(root, "--all")
    for seed in (1, 2, 3, 4):
        assert len(re.findall(rf"^transformer-s{seed}: finished at step 6/6 \(100%\), as of .*"
                              rf"\[{PROGRESS}/transformer-s{seed}\.log\]$", everything, flags=re.M)) == 1, everything
    assert "4 finished" in everything and len(everything.strip().splitlines()) == 5, everything


READ_BYTES = ("import sys\nfrom tprepro.cli import main\nmain(['status', '--logs', sys.argv[1], '--all'])\n"
              "print('rchar', next(line.split()[1] for line in open('/proc/self/io') if line.startswith('rchar')))\n")


def status_reading(root, logs) -> tuple[str, int]:
    """`tprepro status --all` on `logs` (its real entry point): what it prints and how many bytes it read."""
    result = subprocess.run([sys.executable, "-c", READ_BYTES, str(logs)], cwd=root, env=tool_env(),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    shown, _, read = result.stdout.rpartition("rchar ")
    return shown, int(read)


def test_status_reads_only_the_end_of_a_huge_log(tmp_path):
    """A 256 MiB log (a job's output before its progress lines; the issue's was 600 MB, 84 s and 1.65 GB
    to read whole) costs `tprepro status` no more bytes read than a small log with the same end does
    (issue 46): it reads the last megabyte, and still finds the job's last line there."""
    workspace = make_workspace(tmp_path / "ws", steps=20, log_every=5, checkpoint_every=10)
    small, huge = (workspace / kind / "progress" / "tprepro-mathematics" for kind in ("small", "huge"))
    small.mkdir(parents=True)
    huge.mkdir(parents=True)
    with open(small / "transformer-s1.log", "wb") as log:  # a real job's log
        subprocess.run(train_command(workspace, workspace / "run"), cwd=workspace, env=tool_env(), stdout=log,
                       stderr=subprocess.STDOUT, check=True, timeout=600)
    tail = (small / "transformer-s1.log").read_bytes()
    with open(huge / "transformer-s1.log", "wb") as log:
        log.truncate(256 << 20)  # a sparse head: no disk used, every byte still there to read
        log.seek(0, 2)
        log.write(b"\n" + tail)

    shown_small, read_small = status_reading(workspace, small.parents[1])
    shown_huge, read_huge = status_reading(workspace, huge.parents[1])
    assert "transformer-s1: finished at step 20/20 (100%)" in shown_huge, shown_huge
    ageless = [re.sub(r"as of \d+ min \d+ s ago", "", shown) for shown in (shown_huge.replace("huge", "small"), shown_small)]
    assert ageless[0] == ageless[1]
    assert read_huge - read_small < 2 << 20, (read_small, read_huge)  # the tail, not the 256 MiB head
