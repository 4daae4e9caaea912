"""A command's CPU seconds with every process it started, those nobody waits for included."""

import sys

import pytest

from tprepro.errors import TpreproError
from tprepro.plan.cpu_seconds import counted

# A parent that starts a child in a session of its own and exits at once, without waiting for it: the
# child (an orphan, as the generator's forkserver workers become) burns about 1 CPU-second.
ORPHAN = """
import os, subprocess, sys, time
if len(sys.argv) > 1:
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
else:
    subprocess.Popen([sys.executable, __file__, "child"], start_new_session=True)
"""


def test_an_orphaned_descendants_cpu_seconds_are_counted(tmp_path):
    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN)
    result = counted([sys.executable, str(script)])
    assert result["status"] == 0
    assert result["cpu_s"] >= 1.0  # the parent alone takes well under that


def test_a_failing_command_is_an_error_with_its_stderr(tmp_path):
    with pytest.raises(TpreproError, match="exited with status 3:\nboom"):
        counted([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])
