"""The conda generation env must pin exactly what requirements/generate.txt pins."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from helpers import REPO



def _requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def _conda_pip_pins(path: Path) -> list[str]:
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    sections = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(sections) == 1, f"{path}: expected one pip: section"
    return sections[0]


def test_generate_env_pins_match_requirements():
    pins = _conda_pip_pins(REPO / "envs" / "generate.yaml")
    requirements = _requirement_lines(REPO / "requirements" / "generate.txt")
    assert sorted(pins) == sorted(requirements)
    assert len(pins) == len(set(pins)), "duplicate pins in envs/generate.yaml"


def test_generate_env_python_is_311():
    env = yaml.safe_load((REPO / "envs" / "generate.yaml").read_text(encoding="utf-8"))
    assert "python=3.11" in env["dependencies"]
    assert "pip" in env["dependencies"]


def test_every_rule_names_a_conda_env_under_envs():
    """Snakemake resolves a rule's `conda:` path from its .smk file; each must land in envs/."""
    named = set()
    for rules in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for path in re.findall(r'^\s*conda:\s*\n\s*"([^"]+)"', rules.read_text(encoding="utf-8"), re.M):
            env = (rules.parent / path).resolve()
            assert env.parent == REPO / "envs" and env.is_file(), f"{rules.name}: conda: {path}"
            named.add(env.name)
    assert named == {path.name for path in (REPO / "envs").glob("*.yaml")}
