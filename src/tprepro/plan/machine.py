"""The machine a measurement was made on: its CPU model, core count and torch version. Every measurement
file under results/benchmarks/ records one (`machine`); "unknown" where a file was made before it was
recorded and nothing else says."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tprepro.errors import TpreproError

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Machine:
    cpu: str  # the CPU's model name (/proc/cpuinfo), or "unknown"
    cores: int | None  # logical CPUs of the machine; None: unknown
    torch: str  # torch's version, or "unknown"

    @property
    def known(self) -> bool:
        return self.cpu != UNKNOWN

    def describe(self) -> str:
        cores = f"{self.cores} cores" if self.cores else "cores unknown"
        return f"{self.cpu if self.known else 'unknown CPU'} ({cores}, torch {self.torch})"

    def as_record(self) -> dict:
        return {"cpu": self.cpu, "cores": self.cores, "torch": self.torch}


UNKNOWN_MACHINE = Machine(UNKNOWN, None, UNKNOWN)


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo's first `model name`), else what the platform says."""
    cpuinfo = Path("/proc/cpuinfo")
    for line in cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or UNKNOWN


def this_machine() -> Machine:
    """The machine this process runs on (torch's version without importing torch)."""
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = UNKNOWN
    return Machine(cpu_name(), os.cpu_count(), torch)


def read_machine(record, path, key: str = "machine") -> Machine:
    """The `key` entry of a measurement file (absent: unknown), checked: an error names the file and key."""
    if record is None:
        return UNKNOWN_MACHINE
    if not isinstance(record, dict) or not isinstance(record.get("cpu"), str) or not record["cpu"] \
            or not isinstance(record.get("torch"), str) or not (
            record.get("cores") is None or (isinstance(record["cores"], int) and record["cores"] >= 1)):
        raise TpreproError(f"{path}: {key}: expected {{cpu: model name or 'unknown', cores: a count or null, "
                           f"torch: version or 'unknown'}}, got {record!r}")
    return Machine(record["cpu"], record["cores"], record["torch"])
