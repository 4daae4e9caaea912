"""benchmarks/packing.py at a tiny size: padded against packed batches of the real generator's problems."""

import json

from benchmarks import packing


def test_packing_cuts_the_padding_of_every_batch_order(tmp_path, generate_python, monkeypatch, capsys):
    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    results = packing.main(["--batch-size", "32", "--batches", "4", "--pool-batches", "1", "4", "--modules",
                            "numbers__place_value", "polynomials__expand", "--per-module", "40", "--cache",
                            str(tmp_path / "data"), "--out", str(tmp_path / "packing.json")])
    assert [(r["pool_batches"], r["packing"]) for r in results] == [(1, False), (1, True), (4, False), (4, True)]
    padded, packed = results[0], results[1]
    assert packed["padding_share"] < padded["padding_share"] and packed["rows_per_batch"] < 32 == padded["rows_per_batch"]
    assert all(r["stream_samples_per_s"] > 0 for r in results)
    assert json.loads((tmp_path / "packing.json").read_text())["results"] == results
    assert "| random batches | packed |" in capsys.readouterr().out
