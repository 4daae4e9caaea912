"""benchmarks/train_speed.py at a tiny size on CPU: the real Trainer on the real generator's problems."""

import json

import pytest

from helpers import REPO
from tprepro.plan.speeds import THROUGHPUT_SCHEMA

from benchmarks import train_speed

FIELDS = {"schema", "preset", "arch", "device_kind", "device", "torch", "commit", "date", "batch_size", "precision",
          "compile", "threads", "steps", "samples_per_s", "step_s", "flops_per_sample", "mfu_real", "mfu_padded",
          "peak_flops", "padding_share", "data_wait_share", "seconds_to_step_100", "recompiles", "peak_memory_bytes",
          "final_loss", "decode_problems_per_s", "real_tokens_per_sample"}


@pytest.mark.usefixtures("one_torch_thread")
def test_tiny_presets_on_cpu_write_the_schema_plan_reads(tmp_path, generate_python, monkeypatch, capsys):
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    results = train_speed.main([
        "--params", str(REPO / "params.yaml"), "--presets", "transformer_tiny", "tp_transformer_tiny",
        "--modules", "algebra__linear_1d", "numbers__place_value", "--per-module", "30", "--steps", "12",
        "--window", "4", "--batch-size", "8", "--device", "cpu", "--threads", "1", "--decode-batch", "16",
        "--cache", str(tmp_path / "data"), "--out-dir", str(tmp_path / "out")])
    assert [r["preset"] for r in results] == ["transformer_tiny", "tp_transformer_tiny"]
    for result in results:
        written = json.loads((tmp_path / "out" / "cpu" / f"{result['preset']}.json").read_text())
        assert FIELDS <= written.keys() and written["schema"] == THROUGHPUT_SCHEMA
        assert written["device_kind"] == "cpu" and written["compile"] is False and written["precision"] == "fp32"
        assert written["samples_per_s"] > 0 and written["step_s"] == pytest.approx(8 / written["samples_per_s"])
        assert 0 < written["mfu_real"] <= written["mfu_padded"] < 1
        assert 0 <= written["padding_share"] < 1 and 0 <= written["data_wait_share"] < 1
        assert written["flops_per_sample"] > 0 and written["decode_problems_per_s"] > 0
        assert written["stream_samples_per_s"] > written["samples_per_s"]  # the stream alone outpaces a step
        assert len(written["windows"]) == 3 and written["seconds_to_step_100"] is None  # 12 steps
    table = capsys.readouterr().out
    assert "MFU real" in table and "tp_transformer_tiny" in table

    random_batches = {}  # the same sample, random batches, padded and packed
    for packing in ([], ["--packing"]):
        [random_batches[bool(packing)]] = train_speed.main([
            "--params", str(REPO / "params.yaml"), "--presets", "tp_transformer_tiny", "--pool-batches", "1",
            *packing, "--modules", "algebra__linear_1d", "numbers__place_value", "--per-module", "30",
            "--steps", "8", "--window", "4", "--batch-size", "16", "--device", "cpu", "--threads", "1",
            "--decode-batch", "16", "--cache", str(tmp_path / "data"), "--out-dir", str(tmp_path / "random")])
    packed = json.loads((tmp_path / "random" / "cpu" / "tp_transformer_tiny-packed.json").read_text())
    assert packed["packing"] is True and packed["pool_batches"] == 1 and random_batches[False]["packing"] is False
    assert packed["padding_share"] < random_batches[False]["padding_share"]
    assert packed["real_tokens_per_sample"] == pytest.approx(random_batches[False]["real_tokens_per_sample"])


def test_two_variable_presets_train_on_the_projects_two_variable_data(tmp_path):
    [result] = train_speed.main([
        "--experiment", "two_variable", "--params", str(REPO / "params.yaml"), "--presets", "ut_tiny",
        "--per-module", "10", "--steps", "4", "--window", "2", "--batch-size", "8", "--device", "cpu",
        "--threads", "1", "--out-dir", str(tmp_path / "out")])
    assert result["arch"] == "universal_transformer" and result["final_loss"] > 0
    assert (tmp_path / "out" / "cpu" / "ut_tiny.json").is_file()
