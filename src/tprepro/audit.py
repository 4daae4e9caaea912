"""What a command uses, for the tests that hold each Stage's declarations to it: with `TPREPRO_AUDIT_LOG` set, a
command appends one JSON line there at exit: its name and arguments, the project files whose code it ran (modules
imported or functions called after the command line started) and the params keys it read (tprepro.params.reads).

A file counts when code in it runs, not when it was imported to start the command line (the registry imports every
experiment's declarations) nor while settings are validated (params.reads.validating): a stage's code is what it
executes to make its outputs."""

from __future__ import annotations

import atexit
import json
import sys
import threading
from pathlib import Path

AUDIT_LOG = "TPREPRO_AUDIT_LOG"
PACKAGE = Path(__file__).resolve().parent


def project_modules() -> set[str]:
    """The files of the tprepro modules imported so far, relative to the package (e.g. "data/shards.py")."""
    files = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(PACKAGE):
            files.add(Path(file).resolve().relative_to(PACKAGE).as_posix())
    return files


def start(command: str, argv: list[str], log: str) -> None:
    """Record from now on what `command` runs and reads; append it to `log` at exit."""
    from tprepro.params.reads import in_validation, reads, start_recording

    before, ran = project_modules(), set()
    root, itself = str(PACKAGE), __file__

    def called(frame, event, arg):  # a new Python frame: note its file (not while validating), trace nothing inside
        file = frame.f_code.co_filename
        if file.startswith(root) and file != itself and not in_validation():
            ran.add(file)
        return None

    start_recording()
    sys.settrace(called)
    threading.settrace(called)

    def write() -> None:
        sys.settrace(None)
        files = {Path(file).resolve().relative_to(PACKAGE).as_posix() for file in ran}
        line = json.dumps({"command": command, "argv": argv, "code": sorted(files | (project_modules() - before)),
                           "params": sorted(reads())})
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    atexit.register(write)
