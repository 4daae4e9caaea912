"""What the settings may be: the shared sections' schema (schema.yaml) and what each experiment registers of its own
(its sections' schema, its cross-key rules, the models it builds); the core imports no experiment."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable

import yaml

from tprepro.params.yaml_files import UniqueKeyLoader


@dataclass(frozen=True)
class ExperimentRules:
    """What an experiment tells the core about its settings (registered by the experiment registry,
    tprepro.experiments, when the experiments are listed: the core imports no experiment)."""

    check: Callable[[dict, str], None]  # cross-key rules of its sections; raises TpreproError naming the key
    models: Callable[[dict], dict[str, list[str]]]  # {dotted path of a models mapping: the names it builds}
    # JSON Schema of its own params sections ({"properties": {section: schema}, "$defs": {...}}),
    # merged into the shared schema; every section it names is required.
    schema: dict = field(default_factory=dict)


RULES: dict[str, ExperimentRules] = {}


def register_rules(experiment: str, rules: ExperimentRules) -> None:
    RULES[experiment] = rules


@functools.cache
def _shared_schema() -> dict:
    """The schema of the shared sections, read once per process."""
    text = resources.files("tprepro.params").joinpath("schema.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=UniqueKeyLoader)


def params_schema() -> dict:
    """The params schema: the shared sections and every registered experiment's (callers must not
    mutate it)."""
    return _merged_schema(tuple(RULES))


@functools.cache
def _merged_schema(experiments: tuple[str, ...]) -> dict:
    schema = copy.deepcopy(_shared_schema())
    for name in experiments:
        own = RULES[name].schema
        for section in own.get("properties", {}):
            if section in schema["properties"]:
                raise ValueError(f"experiment {name}: params section {section!r} is declared twice")
        schema["properties"].update(own.get("properties", {}))
        schema["required"] = [*schema["required"], *own.get("properties", {})]
        schema["$defs"].update(own.get("$defs", {}))
    return schema
