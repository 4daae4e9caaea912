"""Settings files read strictly: UTF-8 only, no key given twice, YAML 1.2 floats; errors name the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tprepro.errors import TpreproError


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last) and reads
    YAML 1.2 floats written without a dot (`5e-4`, `1E3`) as numbers, as DVC's YAML 1.2 reader does
    (PyYAML's YAML 1.1 rules would make them strings)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: let PyYAML report it
                continue
            if first is not key_node:
                raise TpreproError(
                    f"{self.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                    f"(first given on line {first.start_mark.line + 1})"
                )
        return super().construct_mapping(node, deep=deep)


UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML settings file strictly: UTF-8 only, no duplicate keys; errors name the file."""
    return parse_yaml(read_bytes(path), path)


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise TpreproError(f"{path}: params file not found") from exc
    except OSError as exc:
        raise TpreproError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def parse_yaml(data: bytes, path: str | Path) -> Any:
    """The settings in `data`, the bytes of the file `path` (named in errors); see read_yaml."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TpreproError(f"{path}: line {line}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from exc
    loader = UniqueKeyLoader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise TpreproError(f"{path}: not valid YAML ({exc})") from exc
    finally:
        loader.dispose()
