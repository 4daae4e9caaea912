"""benchmarks/parity_n2f.py against the TP-N2F authors' own model file.

Their file comes from a fetched copy of ckzbullbullet/TP-N2F (nothing of theirs is in this project):
$TPREPRO_N2F_AUTHORS_REPO, or TP-N2F/ beside this checkout. Without one these tests skip.
"""

import os

import pytest
import torch

from helpers import REPO

from benchmarks import parity_n2f

AUTHORS = next((p for p in (os.environ.get("TPREPRO_N2F_AUTHORS_REPO"), REPO.parent / "TP-N2F")
                if p and (parity_n2f.Path(p) / "src/model.py").is_file()), None)
pytestmark = [pytest.mark.skipif(AUTHORS is None, reason="no fetched copy of ckzbullbullet/TP-N2F"),
              pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def sample():
    """(vocab, 30 padded batches of 8) of generated AlgoLisp problems."""
    from tprepro.experiments.n2f.tuple_vocab import build_tuple_vocab

    rows = parity_n2f.algolisp_rows(300, seed=1)
    vocab = build_tuple_vocab(rows, parity_n2f.ARITY)
    return vocab, parity_n2f.row_batches(rows, vocab, 8, 30, seed=1)


def options(*extra: str):
    return parity_n2f.parse_args(["--authors", str(AUTHORS), *extra])


def test_same_weights_and_batches_give_the_same_losses(sample):
    vocab, batches = sample
    result = parity_n2f.same_weights(parity_n2f.load_authors_module(AUTHORS), vocab, batches, options())
    assert result["first_step_over"] is None
    assert result["max_relative_gap"] < 1e-12  # float64, the same operations
    assert result["authors_loss"][-1] < result["authors_loss"][0] - 1.0  # both learned


def test_every_authors_parameter_has_a_place_and_the_batches_lose_their_padding(sample):
    vocab, batches = sample
    torch.manual_seed(1)
    authors, project = parity_n2f.pair(parity_n2f.load_authors_module(AUTHORS), "tiny", vocab, 1, torch.float32)
    assert sum(p.numel() for p in authors.parameters()) == sum(p.numel() for p in project.parameters())
    padded = batches[0]
    assert (padded.src == vocab.pad_id).any()
    cut = parity_n2f.without_padding(padded)
    assert not (cut.src == vocab.pad_id).any() and not (cut.tgt_out[..., 0] == parity_n2f.REL_PAD).any()


def test_a_changed_weight_is_named_as_the_first_difference(sample):
    vocab, batches = sample
    torch.set_default_dtype(torch.float64)
    try:
        authors, project = parity_n2f.pair(parity_n2f.load_authors_module(AUTHORS), "tiny", vocab, 1, torch.float64)
        with torch.no_grad():
            project.decoder.attention.combine.weight.mul_(1.01)  # after the memory projection and the reasoning MLP
        found = parity_n2f.first_difference(authors, project, parity_n2f.without_padding(batches[0]), 1e-3, 1e-9)
    finally:
        torch.set_default_dtype(torch.float32)
    assert found["what"] == "output" and found["module"] == "decoder.O_plus"


def test_init_authors_starts_at_their_scales_and_pytorch_does_not(sample):
    vocab, _ = sample
    module = parity_n2f.load_authors_module(AUTHORS)

    def differences(init: str) -> dict:
        torch.manual_seed(1)
        authors = parity_n2f.build_authors(module, "tiny", vocab)
        return parity_n2f.init_scale_differences(authors, parity_n2f.build_project("tiny", "authors_code", init, vocab))

    assert differences("authors") == {}
    assert {"src_embedding.weight", "opt_embedding.weight", "arg_embedding.weight"} <= set(differences("pytorch"))


def test_own_starts_report_windows_and_held_out_loss(tmp_path):
    report = parity_n2f.main(["--authors", str(AUTHORS), "--mode", "own", "--steps", "20", "--window", "10",
                              "--problems", "200", "--held-out", "40", "--batch-size", "8",
                              "--out", str(tmp_path / "own.json")])
    result = report["results"][0]
    assert {run["side"] for run in result["runs"]} == {"authors", "project:authors_code:authors",
                                                       "project:paper:pytorch"}
    for gap in result["gap"].values():
        assert len(gap["relative"]) == 2 and gap["held_out"]["authors"] > 0
    assert (tmp_path / "own.json").is_file()
