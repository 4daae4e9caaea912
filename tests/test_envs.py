"""The conda generation env must pin exactly what requirements/generate.txt pins."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def _requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def _conda_pip_pins(path: Path) -> list[str]:
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    sections = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(sections) == 1, f"{path}: expected one pip: section"
    return sections[0]


def test_generate_env_pins_match_requirements():
    pins = _conda_pip_pins(REPO / "workflow" / "envs" / "generate.yaml")
    requirements = _requirement_lines(REPO / "requirements" / "generate.txt")
    assert sorted(pins) == sorted(requirements)
    assert len(pins) == len(set(pins)), "duplicate pins in workflow/envs/generate.yaml"


def test_generate_env_python_is_311():
    env = yaml.safe_load((REPO / "workflow" / "envs" / "generate.yaml").read_text(encoding="utf-8"))
    assert "python=3.11" in env["dependencies"]
    assert "pip" in env["dependencies"]
