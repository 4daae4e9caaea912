"""A params file loaded: read with the files it `extends:`, merged, validated once per process while their bytes stay the
same, and handed out as a copy that records what a command reads (params/reads.py)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from tprepro.errors import TpreproError
from tprepro.params.paths import DEFAULT_PARAMS
from tprepro.params.validation import validate_params
from tprepro.params.yaml_files import parse_yaml, read_bytes


EXTENDS = "extends"  # a params file's key naming the file it overlays (a path relative to it)


def load_params(path: str | Path = DEFAULT_PARAMS, models: bool = True) -> dict:
    """Read and validate a params file; errors name the file and the key.

    The one validation path: Snakemake (at parse time), DVC's stages and `tprepro validate`
    all call this. models=False skips the model checks (see validate_params). A file is validated
    once per process while its bytes (and its base's) stay the same; each call returns its own copy.
    A file with `extends: BASE` is BASE (a path relative to the file) with the file's sections
    deep-merged over it (workflow/configs/rehearsal.yaml: paper.yaml at small sizes).
    """
    from tprepro.params.reads import recorded, validating

    with validating():
        valid = _validated(str(path), tuple(_file_chain(Path(path))), models)
    return recorded(copy.deepcopy(valid))


def _file_chain(path: Path, seen: tuple[Path, ...] = ()) -> list[tuple[str, bytes]]:
    """(path, bytes) of `path` and, after it, of each file it extends."""
    data = read_bytes(path)
    base = _extended(parse_yaml(data, path), path) if f"{EXTENDS}:".encode() in data else None
    if base is None:
        return [(str(path), data)]
    if base.resolve() in seen or base.resolve() == path.resolve():
        raise TpreproError(f"{path}: {EXTENDS}: {base} extends this file again (a loop)")
    return [(str(path), data), *_file_chain(base, (*seen, path.resolve()))]


def _extended(settings: Any, path: Path) -> Path | None:
    """The base file a params file names in `extends`, or None."""
    if not isinstance(settings, dict) or EXTENDS not in settings:
        return None
    base = settings[EXTENDS]
    if not isinstance(base, str) or not base:
        raise TpreproError(f"{path}: {EXTENDS}: expected the path of a params file, got {base!r}")
    return path.parent / base


@functools.lru_cache(maxsize=8)
def _validated(path: str, chain: tuple[tuple[str, bytes], ...], models: bool) -> dict:
    """The validated params of the file `path` whose chain of (file, bytes) is `chain` (the cache key:
    an edit of the file or of a base revalidates)."""
    merged: dict = {}
    for name, data in reversed(chain):
        settings = parse_yaml(data, name)
        if isinstance(settings, dict):
            settings = {key: value for key, value in settings.items() if key != EXTENDS}
        merged = merge_overrides(merged, settings) if merged and isinstance(settings, dict) else settings
    source = path if len(chain) == 1 else f"{path} (extending {', '.join(name for name, _ in chain[1:])})"
    return validate_params(merged, source, models=models)


def merge_overrides(base: dict, override: dict) -> dict:
    """Deep-merge `override` into a copy of `base` (for overlay configs)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_overrides(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
