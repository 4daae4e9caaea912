"""Job estimates: measured, extrapolated from a neighbouring preset, unmeasured (never guessed)."""

import pytest

from plan_kit import write_stage_rates, write_throughput
from tprepro.errors import TpreproError
from tprepro.plan.estimate import estimate, parameter_count
from tprepro.plan.speeds import load_measurements
from tprepro.work import Work

TRAIN = Work("train", 64_000, "transformer_paper", 1000, 64, 4, 3)


def test_without_measurements_every_job_is_unmeasured(tmp_path):
    found = estimate(load_measurements(tmp_path), "h100", "train", TRAIN)
    assert found.seconds is None and found.status == "unmeasured"
    assert "transformer_paper" in found.source and "h100" in found.source
    fixed = estimate(load_measurements(tmp_path), "cpu", "tables", Work("fixed"))
    assert fixed.seconds is None and "tables" in fixed.source


def test_a_measured_preset_is_priced_from_its_benchmark(tmp_path):
    write_throughput(tmp_path, "h100", "transformer_paper", 2000.0)
    found = estimate(load_measurements(tmp_path), "h100", "train", TRAIN)
    assert found.status == "measured" and found.seconds == pytest.approx(64_000 / 2000.0)
    assert "benchmark of transformer_paper" in found.source and "no job overhead measured on h100" in found.source
    assert found.disk_bytes == 5 * 4 * parameter_count("transformer_paper")


def test_the_pipeline_runs_fixed_part_is_added_to_a_benchmark(tmp_path):
    write_throughput(tmp_path, "cpu", "transformer_paper", 100.0)
    write_stage_rates(tmp_path, "cpu", {"train": {"fixed_s": 12.0, "per_preset": {"transformer_tiny": 0.002}}})
    found = estimate(load_measurements(tmp_path), "cpu", "train", TRAIN)
    assert found.seconds == pytest.approx(12.0 + 64_000 / 100.0)


def test_a_neighbouring_preset_of_the_same_architecture_is_scaled_by_parameter_count(tmp_path):
    write_throughput(tmp_path, "h100", "transformer_tiny", 50_000.0)
    found = estimate(load_measurements(tmp_path), "h100", "train", TRAIN)
    scale = parameter_count("transformer_paper") / parameter_count("transformer_tiny")
    assert scale > 10
    assert found.status == "extrapolated" and found.source.startswith("extrapolated from transformer_tiny")
    assert found.seconds == pytest.approx(64_000 / 50_000.0 * scale)


def test_another_architecture_is_no_neighbour(tmp_path):
    write_throughput(tmp_path, "h100", "tp_transformer_tiny", 50_000.0)
    write_throughput(tmp_path, "cpu", "transformer_tiny", 500.0)  # the same architecture, another device
    found = estimate(load_measurements(tmp_path), "h100", "train", TRAIN)
    assert found.status == "unmeasured"


def test_a_benchmark_at_another_task_prices_nothing_there(tmp_path):
    """Issue 55: the two-variable trainings were priced by parameter count from the Mathematics benchmark of
    transformer_paper (17 s for 100,000 steps; the UT measured on their own task needs 22 min)."""
    write_throughput(tmp_path, "h100", "transformer_paper", 2000.0)  # on the Mathematics data
    two_variable = Work("train", 12_800_000, "wangperawong_transformer", 100_000, 128, 20, 3)
    found = estimate(load_measurements(tmp_path), "h100", "two-variable-train", two_variable)
    assert found.status == "unmeasured" and "at two_variable" in found.source
    write_throughput(tmp_path, "h100", "wangperawong_ut", 9600.0, task="two_variable")  # another architecture
    assert estimate(load_measurements(tmp_path), "h100", "two-variable-train", two_variable).status == "unmeasured"
    ut = Work("train", 12_800_000, "wangperawong_ut", 100_000, 128, 20, 3)
    found = estimate(load_measurements(tmp_path), "h100", "two-variable-train", ut)
    assert found.seconds == pytest.approx(12_800_000 / 9600.0) and found.source.startswith("benchmark of wangperawong_ut")
    assert estimate(load_measurements(tmp_path), "h100", "train", Work("train", 64_000, "wangperawong_ut", 1000, 64,
                                                                       4, 3)).status == "unmeasured"


def test_decoding_without_a_decode_rate_is_unmeasured(tmp_path):
    write_throughput(tmp_path, "h100", "transformer_paper", 2000.0)  # decode_problems_per_s: null
    decode = Work("decode", 10_000, "transformer_paper")
    assert estimate(load_measurements(tmp_path), "h100", "evaluate", decode).status == "unmeasured"
    write_throughput(tmp_path, "h100", "transformer_paper", 2000.0, decode_problems_per_s=500.0)
    assert estimate(load_measurements(tmp_path), "h100", "evaluate", decode).seconds == pytest.approx(20.0)


def test_a_stage_rate_prices_generated_data_and_its_disk(tmp_path):
    write_stage_rates(tmp_path, "cpu", {"data": {"fixed_s": 3.0, "seconds_per_item": 0.001, "bytes_per_item": 40.0}})
    found = estimate(load_measurements(tmp_path), "cpu", "data", Work("generate", 10_000))
    assert found.seconds == pytest.approx(13.0) and found.disk_bytes == pytest.approx(400_000)
    unknown = estimate(load_measurements(tmp_path), "cpu", "data", Work("generate", None))
    assert unknown.seconds is None and "release files" in unknown.source


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("samples_per_s"), "samples_per_s"),
    (lambda r: r.update(schema="other/1"), "schema"),
    (lambda r: r.update(preset="transformer_tiny"), "must be <device_kind>/<preset>.json"),
    (lambda r: r.update(decode_problems_per_s=-1), "decode_problems_per_s"),
])
def test_a_bad_measurement_file_is_an_error_naming_the_file_and_key(tmp_path, edit, message):
    import json

    path = write_throughput(tmp_path, "h100", "transformer_paper", 2000.0)
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    with pytest.raises(TpreproError, match=rf"transformer_paper\.json: .*{message}"):
        load_measurements(tmp_path)


def test_a_variant_benchmark_beside_a_preset_neither_stops_the_plan_nor_prices_it(tmp_path):
    """benchmarks/train_speed.py --packing writes <preset>-packed.json beside <preset>.json: the plan reads
    both, prices with the pipeline's settings only, and plans with the variant file alone too."""
    from helpers import load_default_params
    from tprepro.plan.plan import make_plan
    from tprepro.plan.speeds import throughput_path

    base = write_throughput(tmp_path, "h100", "transformer_paper", 2000.0)
    packed = throughput_path(tmp_path / "throughput", "h100", "transformer_paper", "packed")
    packed.write_text(base.read_text().replace('"samples_per_s": 2000.0', '"samples_per_s": 9000.0'))
    measured = load_measurements(tmp_path)
    assert [t.variant for t in measured.variants] == ["packed"]
    assert estimate(measured, "h100", "train", TRAIN).seconds == pytest.approx(64_000 / 2000.0)
    base.unlink()
    measured = load_measurements(tmp_path)
    assert estimate(measured, "h100", "train", TRAIN).status == "unmeasured"
    assert make_plan(load_default_params(), measurements=measured).jobs  # plans, the variant aside
