"""The `tprepro data` stage: produce one (split, module) dataset directory; and `tprepro split-index`,
which indexes a split's module directories.

Generation needs mathematics_dataset with sympy 1.4, which cannot share an
environment with torch; from any other interpreter the stage re-runs itself in
the generation interpreter (`$TPREPRO_GENERATE_PYTHON` or `./.venv-gen/bin/python`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import tprepro
from tprepro.children import die_with_parent
from tprepro.data.shards import MANIFEST, dataset_index
from tprepro.experiments.mathematics.modules import TRAIN_SPLITS, split_modules, validate_module
from tprepro.io import atomic_write_text
from tprepro.params import load_params, validate_section
from tprepro.errors import TpreproError

GENERATE_PYTHON_ENV = "TPREPRO_GENERATE_PYTHON"


def can_generate_here() -> bool:
    """Whether this interpreter has mathematics_dataset with sympy 1.4."""
    try:
        sympy_version = metadata.version("sympy")
    except metadata.PackageNotFoundError:
        return False
    return sympy_version == "1.4" and importlib.util.find_spec("mathematics_dataset") is not None


def generate_python() -> Path:
    """The generation interpreter, or TpreproError saying how to get one."""
    configured = os.environ.get(GENERATE_PYTHON_ENV)
    path = Path(configured) if configured else Path.cwd() / ".venv-gen" / "bin" / "python"
    if not path.exists():
        where = f"{GENERATE_PYTHON_ENV}={configured}" if configured else str(path)
        raise TpreproError(
            f"{sys.executable} cannot run mathematics_dataset (needs sympy==1.4) and there is no "
            f"generation interpreter at {where}; run `make install` or set {GENERATE_PYTHON_ENV}"
        )
    return path


def _generate_elsewhere(split: str, module: str, out: Path, data_cfg: dict, processes: int) -> None:
    """Re-run this stage in the generation interpreter, reporting its error as ours."""
    python = generate_python()
    command = [
        str(python), "-m", "tprepro.experiments.mathematics.data_stage",
        "--split", split, "--module", module, "--out", str(Path(out).absolute()),
        "--config-json", json.dumps(data_cfg, sort_keys=True), "--processes", str(processes),
    ]  # fmt: skip
    env = dict(os.environ)
    # Run this very source tree, whatever (if anything) is installed in that venv.
    source_root = str(Path(tprepro.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
    # Killing this stage (even with SIGKILL) kills the generator too: no orphan can later swap a
    # dataset into `out` or race a re-run.
    result = subprocess.run(command, env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=die_with_parent(os.getpid()))
    if result.returncode == 0:
        sys.stderr.write(result.stderr)
        return
    detail = _reported_error(result.stderr)
    raise TpreproError(f"{detail} (generation interpreter {python} exited with status {result.returncode})")


def _reported_error(stderr: str) -> str:
    """The generation interpreter's last `error: ` message with every line that follows it (a
    generator's own traceback included), else the last 20 lines of its stderr."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    if starts:
        return "\n".join(lines[starts[-1]:]).removeprefix("error: ")
    return "\n".join(lines[-20:]) or "no error output"


def _run(split: str, module: str, out: Path, data_cfg: dict, processes: int, allow_reexec: bool) -> None:
    validate_module(split, module)
    validate_section("data", data_cfg, source="data settings")
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise TpreproError(f"processes: expected a positive integer, got {processes!r}")
    rows_per_shard = data_cfg["rows_per_shard"]
    started = time.monotonic()
    if data_cfg["source"] == "release":
        from tprepro.experiments.mathematics.release import load_release

        load_release(data_cfg["release_root"], split, module, out, rows_per_shard)
    elif can_generate_here():
        from tprepro.experiments.mathematics.generate import generate_dataset

        count = data_cfg["train_per_module"] if split in TRAIN_SPLITS else data_cfg["test_per_module"]
        generate_dataset(
            split, module, out,
            seed=data_cfg["seed"], count=count, rows_per_shard=rows_per_shard, processes=processes,
        )  # fmt: skip
    elif allow_reexec:
        _generate_elsewhere(split, module, out, data_cfg, processes)
        return  # the generation interpreter printed the summary
    else:
        raise TpreproError(f"{sys.executable} cannot run mathematics_dataset (needs sympy==1.4)")
    _print_summary(split, module, out, data_cfg["source"], time.monotonic() - started)


def _print_summary(split: str, module: str, out: Path, source: str, seconds: float) -> None:
    """One timestamped line for the stage's log: what was written, from where, how fast."""
    from tprepro.io import utc_stamp

    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    print(f"{utc_stamp()} {split}/{module}: {manifest['rows']} problems in {len(manifest['shards'])} shards -> {out} "
          f"({'generated' if source == 'generate' else 'imported from the release'}, {seconds:.1f} s, "
          f"{manifest['rows'] / max(seconds, 1e-9):.0f} problems/s)", flush=True)


def run_data_stage(split: str, module: str, out: Path, data_cfg: dict, processes: int = 1) -> None:
    """Write the dataset directory `out` for (split, module) as `data_cfg` (params.yaml `data:`) says."""
    _run(split, module, Path(out), data_cfg, processes, allow_reexec=True)


def split_index_stage(params_path: str, split: str, data_dir: Path, out: Path) -> None:
    """Write `out`, the index of `data_dir/<split>`: each grid module's rows, shards and manifest
    SHA-256. The stages reading the split take it as their input (one file, not one per module)."""
    modules = split_modules(load_params(params_path, models=False)["grid"], split)
    index = dataset_index({module: data_dir / split / module for module in modules})
    atomic_write_text(out, json.dumps({"split": split, "modules": index}, indent=2) + "\n")
    print(f"{split}: {len(index)} modules, {sum(m['rows'] for m in index.values())} problems -> {out}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the re-executed stage (`python -m tprepro.experiments.mathematics.data_stage`)."""
    parser = argparse.ArgumentParser(prog="python -m tprepro.experiments.mathematics.data_stage")
    parser.add_argument("--split", required=True)
    parser.add_argument("--module", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--config-json", required=True, help="the data: section of params.yaml as JSON")
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        data_cfg = json.loads(args.config_json)
        if not isinstance(data_cfg, dict):
            raise TpreproError("--config-json: expected a JSON object")
        _run(args.split, args.module, args.out, data_cfg, args.processes, allow_reexec=False)
    except json.JSONDecodeError as exc:
        print(f"error: --config-json: invalid JSON ({exc})", file=sys.stderr)
        return 2
    except TpreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
