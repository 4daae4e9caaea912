"""The machine a measurement names: read from this one, checked in a file."""

import json

import pytest

from plan_kit import write_data_rates, write_stage_rates, write_throughput
from tprepro.errors import TpreproError
from tprepro.plan.machine import UNKNOWN_MACHINE, read_machine, this_machine
from tprepro.plan.speeds import load_measurements


def test_this_machine_is_named_by_its_cpu_model_cores_and_torch():
    import os
    from pathlib import Path

    import torch

    here = this_machine()
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert f"model name\t: {here.cpu}" in cpuinfo or f"model name: {here.cpu}" in cpuinfo.replace("\t", "")
    assert here.cores == os.cpu_count() and here.torch == torch.__version__
    assert here.describe() == f"{here.cpu} ({here.cores} cores, torch {torch.__version__})"


def test_every_written_measurement_names_the_machine_it_was_made_on(tmp_path):
    write_throughput(tmp_path, "cpu", "transformer_tiny", 500.0)
    write_stage_rates(tmp_path, "cpu", {"tables": {"fixed_s": 8.0}})
    write_data_rates(tmp_path, "cpu", {"train-easy/arithmetic__add_or_sub": (2.0, 0.001)})
    measured = load_measurements(tmp_path)
    here = this_machine()
    assert measured.throughput["cpu", "transformer_tiny"].machine == here
    assert measured.stage_rates["cpu"].machine == here and measured.data_rates["cpu"].machine == here


def test_the_committed_measurements_name_a_machine_or_say_unknown():
    from helpers import REPO

    measured = load_measurements(REPO / "results" / "benchmarks")
    assert measured.stage_rates["cpu"].machine.cpu == "Intel(R) Xeon(R) Processor"  # its run recorded it
    assert measured.data_rates["cpu"].machine.cpu == "unknown"  # its run did not: said so, not invented
    files = list((REPO / "results" / "benchmarks").glob("*/*.json")) + list(
        (REPO / "results" / "benchmarks").glob("throughput/*/*.json"))
    assert files and all("machine" in json.loads(path.read_text()) for path in files)


@pytest.mark.parametrize("record", [{"cpu": "", "cores": 2, "torch": "2"}, {"cpu": "x", "cores": 0, "torch": "2"},
                                    {"cpu": "x", "cores": 2}, "x86_64"])
def test_a_bad_machine_record_is_an_error_naming_the_file(record):
    with pytest.raises(TpreproError, match="f.json: machine: expected"):
        read_machine(record, "f.json")
    assert read_machine(None, "f.json") == UNKNOWN_MACHINE
