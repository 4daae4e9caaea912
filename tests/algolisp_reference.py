"""TEST-ONLY oracle: the AlgoLisp reference executor from the `program-synthesis` package.

The package's `__init__` chain imports IPython and TensorFlow, so only the two DSL modules
(`code_lisp.py`, `code_types.py` and their `code_base.py`) are loaded, by file path, under stub
parent packages whose `__path__` points at the real folders (no parent `__init__` runs).
It lives with the tests: nothing in the pipeline imports it.
"""

from __future__ import annotations

import contextlib
import copy
import io
import importlib.util
import sys
import types
from pathlib import Path

PACKAGE = "program_synthesis"
DATASET = "program_synthesis.algolisp.dataset"

FAILED = object()  # the reference rejected the program or failed at run time


def _dataset_dir() -> Path | None:
    spec = importlib.util.find_spec(PACKAGE) if PACKAGE not in sys.modules else None
    roots = list(spec.submodule_search_locations or []) if spec else list(getattr(sys.modules.get(PACKAGE), "__path__", []))
    for root in roots:
        folder = Path(root) / "algolisp" / "dataset"
        if (folder / "code_lisp.py").is_file():
            return folder
    return None


def load_reference_modules():
    """(code_lisp, code_types) modules, or raise ImportError saying what is missing."""
    if f"{DATASET}.code_lisp" in sys.modules:
        return sys.modules[f"{DATASET}.code_lisp"], sys.modules[f"{DATASET}.code_types"]
    folder = _dataset_dir()
    if folder is None:
        raise ImportError("program-synthesis==0.1.2 is not installed (pip install --no-deps program-synthesis==0.1.2)")
    importlib.import_module("six")  # the DSL modules need it
    parents = {PACKAGE: folder.parent.parent, "program_synthesis.algolisp": folder.parent, DATASET: folder}
    for name, path in parents.items():
        if name not in sys.modules or not hasattr(sys.modules[name], "__path__"):
            stub = types.ModuleType(name)
            stub.__path__ = [str(path)]
            sys.modules[name] = stub
    loaded = []
    for short in ("code_base", "code_types", "code_lisp"):
        name = f"{DATASET}.{short}"
        spec = importlib.util.spec_from_file_location(name, folder / f"{short}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        loaded.append(module)
    return loaded[2], loaded[1]


class _NoMemo(dict):
    """Stands in for the reference's global result memo, which keys a `self` call by its text and
    argument values only, so two different recursive lambdas can share wrong results."""

    def __contains__(self, key) -> bool:
        return False

    def __setitem__(self, key, value) -> None:
        pass


class ReferenceExecutor:
    """Runs a program tree the way the reference evaluation does: type check, compile, call."""

    def __init__(self) -> None:
        self.code_lisp, self.code_types = load_reference_modules()
        self.units = self.code_lisp.load_lisp_units()
        self.code_lisp._EXECUTION_CACHE = _NoMemo()
        self.last_error: str | None = None  # the exception class of the last failed run

    def run(self, tree, arg_types: dict[str, str], inputs: dict):
        """The program's value, or FAILED (static rejection or any exception, named in `last_error`)."""
        self.last_error = None
        try:
            arguments = [(name, self.code_types.str_to_type(t)) for name, t in arg_types.items()]
            self.code_lisp.test_lisp_validity(self.units, copy.deepcopy(tree), dict(arguments), self.code_types.Type.T)
            func = self.code_lisp.compile_func(self.units, "main", copy.deepcopy(tree), arguments, self.code_types.Type.T)
            values = copy.deepcopy([inputs[name] for name, _ in arguments])
            with contextlib.redirect_stdout(io.StringIO()):  # it prints on some TypeErrors
                return func(*values)
        except Exception as exc:  # noqa: BLE001 - the reference counts every exception as a failed test
            self.last_error = type(exc).__name__
            return FAILED
