"""The references in a stage's declaration (its dvc.yaml paths and commands): `${item.<key>}` for a job's
matrix value and `${dotted.key}` for a params value. The workflow helpers (Snakemake's patterns) and the
plan (its jobs) read them alike."""

from __future__ import annotations

import itertools
from collections.abc import Collection
import re

from tprepro.errors import TpreproError


def setting(params: dict, key: str):
    """The value of dotted params `key` (e.g. "n2f.algolisp.train")."""
    value = params
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise TpreproError(f"params: no key {key!r} (a stage's params in tprepro.experiments names it)")
        value = value[part]
    return value


DVC_REFERENCE = re.compile(r"\$\{([^}]+)\}")  # ${item.model}, ${key}, ${n2f.seeds[0]}


def wildcard_of(reference: str, names: dict[str, str]) -> str | None:
    """The wildcard a DVC reference stands for in a rule: `item.<key>` is `<key>`, `item` and `key`
    the one `names` gives them (e.g. key="dataset"); None for a params reference."""
    if reference.startswith("item."):
        return reference.removeprefix("item.")
    if reference in ("item", "key"):
        return names[reference]
    return None


def pattern(path: str, params: dict | None = None, **names: str) -> str:
    """A dvc.yaml path as a Snakemake file pattern: `${item.task}` becomes `{task}` (see wildcard_of),
    a params reference its value in `params` (an error without them)."""
    def snakemake(match: re.Match) -> str:
        wildcard = wildcard_of(match.group(1), names)
        if wildcard is not None:
            return f"{{{wildcard}}}"
        if params is None:
            raise TpreproError(f"{path}: an output path takes wildcards only, not ${{{match.group(1)}}}")
        return params_value(match.group(1), params)

    return DVC_REFERENCE.sub(snakemake, path)


def params_value(reference: str, params: dict) -> str:
    """The value of a DVC params reference: a dotted key, or an element of a list (`n2f.seeds[0]`)."""
    key, index = re.fullmatch(r"(.+?)(?:\[(\d+)\])?", reference).groups()
    value = setting(params, key)
    return str(value[int(index)] if index is not None else value)


def matched(path: str, output: str) -> dict[str, str] | None:
    """The wildcard values with which Snakemake pattern `output` is `path`, or None (a `{name}` matches
    one path component)."""
    parts = re.split(r"\{(\w+)\}", output)  # text, wildcard, text, ...
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts))
    match = re.fullmatch(regex, path)
    return match.groupdict() if match else None


def axis_values(params: dict, declared) -> list:
    """One matrix axis of a stage: the values of a params reference (`${grid.models}`; a mapping's keys)
    or the values declared."""
    if isinstance(declared, str):
        reference = DVC_REFERENCE.fullmatch(declared)
        if reference is None:
            raise TpreproError(f"a matrix axis {declared!r} is neither values nor a params reference")
        return list(setting(params, reference.group(1)))
    return list(declared)


# A foreach stage's one wildcard: its value ({item}) or, over a mapping, its entry's name ({key}).
FOREACH = {"item": "item", "key": "key"}


def axes_of(matrix: dict | None, foreach: str | None, foreach_key: bool) -> tuple[tuple[str, object], ...]:
    """A dvc.yaml stage's axes, (wildcard, a params reference or the values): its matrix's, or its foreach's."""
    if matrix:
        return tuple(matrix.items())
    return (("key" if foreach_key else "item", foreach),) if foreach else ()


def job_values(params: dict, axes, keep: Collection[str] = ()) -> list[dict[str, str]]:
    """Each job's wildcard values, the axes' values combined; a wildcard in `keep` stays `{name}`."""
    keys = [key for key, _ in axes]
    values = [[f"{{{key}}}"] if key in keep else [str(v) for v in axis_values(params, declared)]
              for key, declared in axes]
    return [dict(zip(keys, combination)) for combination in itertools.product(*values)]
