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
from tprepro.params import merge_overrides
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
        """The override sections, then the shared keys read (see shared_keys)."""
        return (*self.over, *self.shared_keys())

    def merged(self, params: dict, **names: str) -> dict:
        """`base` with each override section on top, in order; one with a `{wildcard}` that `names` does not
        give is left out (n2f.{task}.train without a task)."""
        merged = setting(params, self.base)
        for key in self.over:
            try:
                key = key.format(**names)
            except KeyError:
                continue
            merged = merge_overrides(merged, setting(params, key))
        return merged


def schema_at(key: str) -> dict:
    """The params schema of dotted `key` (every registered experiment's sections included)."""
    from tprepro.params import _schema

    schema = _schema()
    for part in key.split("."):
        properties = schema.get("properties", {})
        if part not in properties:
            raise TpreproError(f"params schema: no key {key!r} (a stage's Layered params name it)")
        schema = properties[part]
    return schema
