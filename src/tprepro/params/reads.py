"""Which settings a command reads: while recording is on (`tprepro.cli` turns it on for `TPREPRO_AUDIT_LOG`),
`load_params` hands out mappings that note every key read from them, as a dotted path ("evaluate.batch_size").

A read of one key notes that key; reading a whole mapping (iterating it, its keys, items or values, its length,
a copy, a comparison) notes the mapping's own path, which covers every key under it. The tests compare what each
stage reads with the params keys its Stage declares (tests/pipeline_kit.py: undeclared_reads)."""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Iterator

import yaml

_READS: set[str] | None = None  # the paths read so far; None while recording is off
WHOLE = "*"  # the path noted when the whole params mapping is read
_VALIDATING = [0]  # how many validations are under way in this process


@contextlib.contextmanager
def validating() -> Iterator[None]:
    """While settings are validated (every experiment's rules): what runs then decides whether a stage runs, not
    what it writes, so tprepro.audit does not count it as the stage's code."""
    _VALIDATING[0] += 1
    try:
        yield
    finally:
        _VALIDATING[0] -= 1


def in_validation() -> bool:
    return _VALIDATING[0] > 0


def start_recording() -> None:
    """Record the reads of every params mapping load_params hands out from now on, in this process."""
    global _READS
    if _READS is None:
        _READS = set()


def reads() -> set[str]:
    """The paths read since recording started (empty when it is off)."""
    return set(_READS or ())


def for_the_record(section: dict) -> dict:
    """A plain copy of params `section` read without noting it: settings a stage copies into its run's record (MLflow
    params, where the run is tracked) that describe its inputs or its bookkeeping but do not decide what it writes."""
    return _plain(section) if isinstance(section, Recorded) else section


def peek(mapping: dict, *keys: str):
    """The value at `keys` under `mapping`, read without noting it: a guard's read (is this job's model or task one
    the params list?), which decides whether the stage runs, never what it writes."""
    value = mapping
    for key in keys:
        value = dict.__getitem__(value, key)
    return for_the_record(value) if isinstance(value, dict) else value


def recorded(params: dict) -> dict:
    """`params`, noting its reads if recording is on."""
    return Recorded(params, "", _READS) if _READS is not None else params


class Recorded(dict):
    """A params mapping that notes the keys read from it in `reads`; mappings under it note theirs too."""

    def __init__(self, data: dict, path: str, noted: set[str]):
        super().__init__({key: Recorded(value, _join(path, key), noted) if isinstance(value, dict) else value
                          for key, value in data.items()})
        self._path, self._noted = path, noted

    def _whole(self) -> None:
        self._noted.add(self._path or WHOLE)

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if not isinstance(value, Recorded):
            self._noted.add(_join(self._path, key))
        return value

    def get(self, key, default=None):
        if not super().__contains__(key):
            self._noted.add(_join(self._path, key))  # asking for a missing key is a read of it
            return default
        return self[key]

    def __contains__(self, key) -> bool:
        found = super().__contains__(key)
        if not (found and isinstance(super().__getitem__(key), Recorded)):  # a section's presence is not its content
            self._noted.add(_join(self._path, key))
        return found

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def keys(self):
        self._whole()
        return super().keys()

    def items(self):
        self._whole()
        return super().items()

    def values(self):
        self._whole()
        return super().values()

    def __len__(self) -> int:
        self._whole()
        return super().__len__()

    def __eq__(self, other) -> bool:
        self._whole()
        return super().__eq__(other)

    __hash__ = None

    def copy(self) -> dict:
        self._whole()
        return _plain(self)

    def __deepcopy__(self, memo) -> dict:
        self._whole()
        return copy.deepcopy(_plain(self), memo)

    def __reduce_ex__(self, protocol):
        self._whole()
        return dict, (_plain(self),)


def _plain(mapping: dict) -> dict:
    """A plain-dict copy of a Recorded mapping's content (no reads noted)."""
    return {key: _plain(value) if isinstance(value, dict) else value for key, value in dict.items(mapping)}


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


yaml.SafeDumper.add_representer(Recorded, lambda dumper, data: dumper.represent_dict(data.copy()))  # read whole
