"""The CPU seconds (user + system) of a command and of every process it started, those nobody waits for
included (the Mathematics generator's forkserver workers): the counting process makes itself their
subreaper (Linux prctl PR_SET_CHILD_SUBREAPER), so an orphaned descendant is re-parented to it, reaped by
it, and counted in its children's resource usage. No root and no cgroup needed, so it runs the same on a
workstation and inside a SLURM job.

    python -m tprepro.plan.cpu_seconds -- tprepro data --params ... # prints {"cpu_s": ..., "wall_s": ..., "status": ...}

Run it as a process of its own (`counted`): the subreaper setting stays with the process that made it."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time

from tprepro.errors import TpreproError

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
REAP_TIMEOUT_S = 120  # orphans still running this long after the command ended: an error, not a wait forever


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _reap_orphans() -> None:
    """Wait for every descendant re-parented to this process (it has no other children)."""
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes of the command still running {REAP_TIMEOUT_S} s after it ended")
            time.sleep(0.05)


def run_counted(argv: list[str]) -> dict:
    """Run `argv` to its end, and every process it left behind; its status, wall and CPU seconds."""
    if not sys.platform.startswith("linux"):
        raise OSError("counting a command's CPU seconds needs Linux (PR_SET_CHILD_SUBREAPER)")
    _become_subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    status = subprocess.run(argv, stdout=subprocess.DEVNULL).returncode
    _reap_orphans()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"status": status, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def counted(argv: list[str], env: dict | None = None, cwd=None) -> dict:
    """`run_counted(argv)` in a process of its own (its stderr passed through); TpreproError if it failed."""
    done = subprocess.run([sys.executable, "-m", __name__, "--", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True)
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise TpreproError(f"counting {' '.join(argv[:3])} ...: {done.stderr.strip()[-2000:]}") from None
    if result["status"] != 0:
        raise TpreproError(f"{' '.join(argv)} exited with status {result['status']}:\n{done.stderr.strip()[-2000:]}")
    return result


if __name__ == "__main__":
    command = sys.argv[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        sys.exit("usage: python -m tprepro.plan.cpu_seconds -- COMMAND ...")
    print(json.dumps(run_counted(command)))
