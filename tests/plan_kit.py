"""Measurement files of the plan's schemas, written for tests (real files, read by the real readers)."""

from __future__ import annotations

from pathlib import Path


def write_throughput(root: Path, device_kind: str, preset: str, samples_per_s: float, **extra) -> Path:
    """results/benchmarks/throughput/<device_kind>/<preset>.json through its owner's writer, as benchmarks/train_speed.py writes it."""
    from tprepro.models.registry import resolve_model_config

    from tprepro.plan.speeds import write_throughput as write

    record = {"preset": preset, "arch": resolve_model_config(preset).arch,
              "device_kind": device_kind, "device": f"a {device_kind} for tests", "torch": "2.x",
              "commit": "0000000", "date": "2026-11-27", "batch_size": 64, "precision": "fp32", "compile": False,
              "threads": 1, "steps": 20, "samples_per_s": samples_per_s, "step_s": 64 / samples_per_s,
              "flops_per_sample": 1.0e7, "mfu_real": None, "mfu_padded": None, "peak_flops": None,
              "padding_share": 0.1, "data_wait_share": 0.0, "seconds_to_step_100": None, "recompiles": None,
              "peak_memory_bytes": None, "final_loss": 2.0, "decode_problems_per_s": None,
              "real_tokens_per_sample": 40.0, "task": "mathematics", **extra}
    return write(record, root / "throughput")


def write_stage_rates(root: Path, device_kind: str, stages: dict) -> Path:
    """results/benchmarks/stages/<device_kind>.json through its owner's writer."""
    from tprepro.plan.speeds import write_stage_rates as write

    return write({"device_kind": device_kind, "device": "a test CPU", "commit": "0000000", "date": "2026-11-27",
                  "source": "a test", "stages": stages}, root)


def write_data_rates(root: Path, device_kind: str, jobs: dict) -> Path:
    """results/benchmarks/data/<device_kind>.json through its owner's writer: {"split/module": (fixed_s, s/problem)}."""
    from tprepro.plan.speeds import DataRate, write_data_rates as write

    rates = {job: DataRate(fixed, rate, (200, 1000), (fixed + 200 * rate, fixed + 1000 * rate))
             for job, (fixed, rate) in jobs.items()}
    return write(rates, kind=device_kind, device="a test CPU", commit="0000000", date="2026-11-27",
                 source="a test", root=root)
