"""Child processes that cannot outlive the stage that started them.

`die_with_parent(os.getpid())` is a `preexec_fn` for subprocess: on Linux it asks the kernel
(prctl PR_SET_PDEATHSIG) to SIGKILL the child as soon as its parent dies, however the parent
died (kill -9 included), so a killed stage leaves no orphan writing into its outputs.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec_fn: the child receives SIGKILL when `parent_pid` exits (Linux; elsewhere nothing)."""

    def arm() -> None:
        if not sys.platform.startswith("linux"):
            return
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(70)  # cannot promise the child dies with us: do not start it
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(70)

    return arm
