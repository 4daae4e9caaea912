"""benchmarks/parity.py against the TP-Transformer authors' own model files.

The authors' files come from a fetched copy of ischlag/TP-Transformer (nothing of theirs is in this
project): $TPREPRO_AUTHORS_REPO, or TP-Transformer/ beside this checkout. Without one these tests skip.
"""

import os

import pytest
import torch

from helpers import REPO

from benchmarks import parity

AUTHORS = next((p for p in (os.environ.get("TPREPRO_AUTHORS_REPO"), REPO.parent / "TP-Transformer")
                if p and (parity.Path(p) / parity.AUTHORS_FILES["tp_transformer"]).is_file()), None)
pytestmark = [pytest.mark.skipif(AUTHORS is None, reason="no fetched copy of ischlag/TP-Transformer"),
              pytest.mark.usefixtures("one_torch_thread")]
SIZES = {"d_model": 32, "n_heads": 4, "d_ff": 64, "n_encoder_layers": 2, "n_decoder_layers": 2}


def args(*extra: str):
    return parity.parse_args(["--authors", str(AUTHORS), "--data", "synthetic", "--batch-size", "8", *extra])


@pytest.mark.parametrize("arch", ["tp_transformer", "transformer"])
def test_same_weights_and_batches_give_the_same_losses_for_100_steps(arch):
    options = args("--steps", "100")
    module = parity.load_authors_module(AUTHORS, arch)
    batches = parity.synthetic_batches(100, 8, 24, 0, seed=1)
    result = parity.same_weights(arch, module, SIZES, batches, 24, 0, options)
    assert result["first_step_over"] is None
    assert result["max_relative_gap"] < 1e-7  # float64; their sqrt(d_z) is a float32 constant (3e-9 at step 100)
    assert result["authors_loss"][-1] < result["authors_loss"][0] - 0.3  # both learned


def test_a_changed_weight_is_named_as_the_first_difference():
    module = parity.load_authors_module(AUTHORS, "tp_transformer")
    torch.set_default_dtype(torch.float64)
    try:
        authors, project = parity.build_pair("tp_transformer", module, SIZES, 24, 0, 1, "authors", torch.float64,
                                             shared=True)
        with torch.no_grad():
            project.decoder[1].cross_attn.binding.role_proj.weight.mul_(1.01)
        batch = parity.synthetic_batches(1, 8, 24, 0, seed=2)[0]
        found = parity.first_difference(authors, project, batch, 0, 5e-4, (0.9, 0.995), 0.1, 1e-6)
    finally:
        torch.set_default_dtype(torch.float32)
    assert found["what"] == "output"
    assert found["module"] == "decoder.layers.1.encAttn.W_r"
    assert found["project"] == "decoder.1.cross_attn.binding.role_proj"


def test_every_authors_parameter_maps_onto_the_project_model():
    for arch in ("tp_transformer", "transformer"):
        module = parity.load_authors_module(AUTHORS, arch)
        authors, project = parity.build_pair(arch, module, SIZES, 24, 0, 1, "authors", torch.float32, shared=True)
        assert sum(p.numel() for p in authors.parameters()) == sum(p.numel() for p in project.parameters())


def test_authors_init_starts_at_their_scales_and_authors_xavier_does_not():
    module = parity.load_authors_module(AUTHORS, "tp_transformer")
    sizes = {**SIZES, "d_model": 128, "d_ff": 256}
    same = parity.init_scale_differences(*parity.build_pair("tp_transformer", module, sizes, 24, 0, 1, "authors",
                                                            torch.float32, shared=False))
    assert same == {}
    wider = parity.init_scale_differences(*parity.build_pair("tp_transformer", module, sizes, 24, 0, 1,
                                                             "authors_xavier", torch.float32, shared=False))
    assert "encoder.layers.0.MHA.W_r.weight" in wider and "decoder.layers.1.encAttn.W_q.weight" in wider
    assert not any("densefilter" in name or "embedding" in name for name in wider)


def test_the_command_line_prints_the_verdict_and_writes_json(tmp_path):
    report = parity.main(["--authors", str(AUTHORS), "--data", "synthetic", "--batch-size", "4", "--steps", "5",
                          "--archs", "transformer", "--out", str(tmp_path / "parity.json")])
    assert report["results"][0]["first_step_over"] is None
    assert (tmp_path / "parity.json").is_file()
