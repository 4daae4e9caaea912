"""A measurement's report: stamped with the commit, device and date it was taken on, written as JSON (atomically,
its folder made), and shown as a markdown table."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from tprepro.io import atomic_write_text
from tprepro.plan.machine import cpu_name

from benchmarks.kit.sample import REPO


def commit() -> str:
    """The checkout's short commit ("unknown" outside a git checkout)."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def device_name(device: torch.device | str = "cpu") -> str:
    """The GPU's name for a CUDA device, else "cpu"."""
    device = torch.device(device)
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def device_kind(device: torch.device | str = "cpu") -> str:
    """A short name for the device: cpu, h100, h200, a100, ... (the plan's `--device`)."""
    device = torch.device(device)
    return "cpu" if device.type != "cuda" else kind_of_name(torch.cuda.get_device_name(device))


def kind_of_name(name: str) -> str:
    """The model number in a GPU's name ("NVIDIA H100 80GB HBM3" -> "h100"), else the whole name as a slug."""
    found = re.search(r"\b([A-Z]\d{2,4}[A-Z]?)\b", name)
    return (found.group(1) if found else re.sub(r"\W+", "-", name).strip("-")).lower()


def stamp(device: torch.device | str = "cpu") -> dict:
    """Where and when a measurement was taken: commit, device (the GPU's name, or "cpu" and the CPU's), UTC date,
    torch version."""
    where = {"device": device_name(device)}
    if where["device"] == "cpu":
        where["cpu"] = cpu_name()
    return {"commit": commit(), **where, "date": time.strftime("%Y-%m-%d", time.gmtime()), "torch": torch.__version__}


def write_report(path: Path, report: dict, indent: int = 2) -> Path:
    """`report` as JSON at `path` (its folder made; written atomically, so a run stopped midway leaves the last
    whole report)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(report, indent=indent) + "\n")
    return path


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table of `rows` (cells already formatted, or shown with str)."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)
