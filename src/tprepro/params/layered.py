"""A shared params section as an experiment reads it, under its own overrides, and the params keys a stage
that reads it depends on.

Two-variable, N2F and summarization train with `train:` under their own `<experiment>.train:` overrides
(`merge_overrides`). A key their schema requires in the override section is set there in every valid params
file, so its shared value is never read: their stages depend on the override sections and on the shared
section's other keys one by one, and a change of `train.steps` reruns the Mathematics trainings alone, in
Snakemake and DVC alike (tests/experiments/mathematics/test_pipeline.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from tprepro.errors import TpreproError
from tprepro.params.loading import merge_overrides
from tprepro.params.references import setting


@dataclass(frozen=True)
class Layered:
    """Shared section `base` (e.g. "train") read under the override sections `over`, the experiment's own
    first (e.g. "n2f.train", then "n2f.{task}.train"); `keys`: only these of base's keys (default: all)."""

    base: str
    over: tuple[str, ...]
    keys: tuple[str, ...] | None = None

    def shared_keys(self) -> tuple[str, ...]:
        """The dotted keys of `base` whose values the stage reads: those the first override section does
        not always set (its schema's `required`)."""
        own = set(schema_at(self.over[0]).get("required", ()))
        keys = self.keys or tuple(schema_at(self.base)["properties"])
        return tuple(f"{self.base}.{key}" for key in keys if key not in own)

    def params_keys(self) -> tuple[str, ...]:
        """The override sections, then the shared keys read (see shared_keys). With `keys`, an override section
        is named by those of its keys its schema requires, and whole if it may lack one (DVC refuses a params
        key missing from the file); `read_under` says which keys of it are read."""
        over = []
        for section in self.over:
            required = set(schema_at(section).get("required", ())) if "{" not in section else set()
            if self.keys is not None and set(self.keys) <= required:
                over += [f"{section}.{key}" for key in self.keys]
            else:
                over.append(section)
        return (*over, *self.shared_keys())

    def read_under(self, key: str) -> tuple[str, ...] | None:
        """The keys read under params key `key` (one of params_keys), or None if all of them are."""
        return self.keys if key in self.over else None

    def values(self, params: dict, **names: str) -> dict:
        """Its `keys` of the merged section (see merged), reading only those keys of each section: what a stage
        declaring this Layered entry (with its keys) reads."""
        if self.keys is None:
            raise TpreproError(f"Layered({self.base!r}).values: name the keys read (keys=...)")
        return {key: self.value(params, key, **names) for key in self.keys}

    def value(self, params: dict, key: str, **names: str):
        """One key of the merged section (see merged), reading only that key of each section."""
        for section in reversed(self.over):
            try:
                section = section.format(**names)
            except KeyError:
                continue
            found = setting(params, section)
            if key in found:
                return found[key]
        return setting(params, self.base)[key]

    def merged(self, params: dict, **names: str) -> dict:
        """`base` with each override section on top, in order; one with a `{wildcard}` that `names` does not
        give is left out (n2f.{task}.train without a task). Of `base`, only the shared keys are read: the first
        override sets the others."""
        base = setting(params, self.base)
        names_read = [key.rpartition(".")[2] for key in self.shared_keys()]
        merged = {name: base[name] for name in names_read if name in base}
        for key in self.over:
            try:
                key = key.format(**names)
            except KeyError:
                continue
            merged = merge_overrides(merged, setting(params, key))
        return merged


def schema_at(key: str) -> dict:
    """The params schema of dotted `key` (every registered experiment's sections included)."""
    from tprepro.params.rules import params_schema

    schema = params_schema()
    for part in key.split("."):
        properties = schema.get("properties", {})
        if part not in properties:
            raise TpreproError(f"params schema: no key {key!r} (a stage's Layered params name it)")
        schema = properties[part]
    return schema
