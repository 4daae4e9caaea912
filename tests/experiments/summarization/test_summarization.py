"""The summarization experiment's parts on the real CI corpus (standard-library docstrings):
each release format's loader (and malformed files), the subword codec, beam search, ROUGE,
the trainer's Adafactor / inverse-square-root option and exact resume."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from rouge_score import rouge_scorer

from helpers import tool_env
from training_kit import CrashAt, assert_same_weights
from tprepro.params import TrainConfig, validate_params
from tprepro.data.shards import iter_rows, open_dataset
from tprepro.errors import TpreproError
from tprepro.evaluate.decode import greedy_decode
from tprepro.models.registry import resolve_model_config
from tprepro.models.registry import build_model
from tprepro.experiments.summarization import SCHEMA, SPLITS, TEST, TRAIN, VALIDATION
from tprepro.experiments.summarization.corpus import release_of, stdlib_examples, story_name, story_url, write_releases
from tprepro.experiments.summarization.decoding import _blocked_tokens, beam_search, summarize_documents
from tprepro.experiments.summarization.loaders import (load_arxiv, load_huggingface, load_release, load_stories, load_wikihow,
                                           write_dataset)
from tprepro.experiments.summarization.scoring import ROUGE_TYPES, bootstrap_interval, rouge_f1
from tprepro.experiments.summarization.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, SubwordCodec, train_subwords
from tprepro.train.trainer import Trainer, TrainJob
from tprepro.train.step import scheduled_lr

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FRACTIONS = {VALIDATION: 0.15, TEST: 0.15}


@pytest.fixture(scope="module")
def examples():
    return stdlib_examples(240, FRACTIONS)


@pytest.fixture(scope="module")
def releases(examples, tmp_path_factory):
    return write_releases(examples, tmp_path_factory.mktemp("corpus") / "corpus")


def expected(examples, split, release):
    return {(e.id, e.summary, e.document) for e in examples if e.split == split and release_of(e.id) == release}


def as_triples(rows):
    return {(r["id"], r["summary"], r["document"]) for r in rows}


# ---- the corpus ------------------------------------------------------------------------------------------
def test_corpus_is_real_deterministic_and_split_by_id(examples, tmp_path):
    assert len(examples) == 240 and len({e.id for e in examples}) == 240
    assert {e.split for e in examples} == set(SPLITS)
    assert {release_of(e.id) for e in examples} == {"xsum", "cnndm", "wikihow", "arxiv"}
    assert all(len(e.document.split()) >= 20 and 4 <= len(e.summary.split()) <= 40 for e in examples)
    assert stdlib_examples(240, FRACTIONS) == examples
    first, second = write_releases(examples, tmp_path / "a"), write_releases(examples, tmp_path / "b")
    for name in first:
        files = sorted(p.relative_to(first[name]) for p in first[name].rglob("*") if p.is_file())
        assert files and files == sorted(p.relative_to(second[name]) for p in second[name].rglob("*") if p.is_file())
        assert all((first[name] / f).read_bytes() == (second[name] / f).read_bytes() for f in files)


# ---- the loaders, one per release format ----------------------------------------------------------------
def test_huggingface_jsonl_export(examples, releases):
    splits = load_huggingface(releases["xsum"], ("document", "summary"))
    for split in SPLITS:
        assert as_triples(splits[split]) == expected(examples, split, "xsum")
        assert all(r["split"] == split for r in splits[split])


def test_huggingface_parquet_export(examples, releases):
    splits = load_release("cnndm", {"format": "huggingface", "path": str(releases["cnndm"])}, FRACTIONS)
    assert all(as_triples(splits[s]) == expected(examples, s, "cnndm") for s in SPLITS)


def test_story_files(examples, releases):
    splits = load_stories(releases["cnndm_stories"])
    for split in SPLITS:
        rows = [e for e in examples if e.split == split and release_of(e.id) == "cnndm"]
        assert {r["id"] for r in splits[split]} == {story_name(story_url(e)).removesuffix(".story") for e in rows}
        assert {(r["summary"], r["document"]) for r in splits[split]} == {(e.summary, e.document) for e in rows}


def test_wikihow_csv_is_cleaned_and_split_by_the_title_lists(examples, releases):
    path = releases["wikihow"] / "wikihowAll.csv"
    splits = load_wikihow(path, FRACTIONS)
    assert all(as_triples(splits[s]) == expected(examples, s, "wikihow") for s in SPLITS)
    assert not any(r["summary"].endswith(",") or r["summary"].startswith("\n") for r in splits[TRAIN])


def test_wikihow_without_title_lists_splits_by_a_hash_and_drops_empty_rows(tmp_path):
    csv_path = tmp_path / "wikihowAll.csv"
    csv_path.write_text('headline,title,text\n"\nPlant the seeds.,\nWater them.,",How to Grow Beans,"Dig a hole.\n,'
                        'Put a seed in it."\n"\nNothing here.,",How to Wait,""\n', encoding="utf-8")
    splits = load_wikihow(csv_path, {VALIDATION: 0.0, TEST: 0.0})
    assert splits[TRAIN] == [{"document": "Dig a hole.\nPut a seed in it.", "summary": "Plant the seeds. Water them.",
                              "id": "How to Grow Beans", "split": TRAIN}]
    assert splits[TEST] == splits[VALIDATION] == []


def test_arxiv_jsonl(examples, releases):
    splits = load_arxiv(releases["arxiv"])
    assert all(as_triples(splits[s]) == expected(examples, s, "arxiv") for s in SPLITS)
    assert not any("<S>" in r["summary"] for r in splits[TRAIN])


def _copy(releases, name, tmp_path):
    import shutil

    return shutil.copytree(releases[name], tmp_path / name)


def test_malformed_json_lines_name_file_and_line(releases, tmp_path):
    directory = _copy(releases, "xsum", tmp_path)
    lines = (directory / "test.jsonl").read_text().splitlines()
    (directory / "test.jsonl").write_text("\n".join([lines[0], '{"document": "a", "summary": ', *lines[1:]]))
    with pytest.raises(TpreproError, match=r"test\.jsonl:2: not valid JSON"):
        load_huggingface(directory, ("document", "summary"))
    (directory / "test.jsonl").write_text(lines[0] + "\n" + json.dumps({"document": "a", "id": "x"}) + "\n")
    with pytest.raises(TpreproError, match=r"test\.jsonl:2: missing key\(s\) 'summary'"):
        load_huggingface(directory, ("document", "summary"))
    (directory / "test.jsonl").write_text(json.dumps({"document": ["a"], "summary": "b", "id": "x"}) + "\n")
    with pytest.raises(TpreproError, match=r"test\.jsonl:1: 'document' must be a string"):
        load_huggingface(directory, ("document", "summary"))


def test_malformed_parquet_export_names_the_file(releases, tmp_path):
    directory = _copy(releases, "cnndm", tmp_path)
    pq.write_table(pa.table({"article": ["a"], "id": ["x"]}), directory / "validation.parquet")
    with pytest.raises(TpreproError, match=r"validation\.parquet: missing column\(s\) 'highlights'"):
        load_huggingface(directory, ("article", "highlights"))
    (directory / "validation.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(TpreproError, match=r"validation\.parquet: not a readable parquet file"):
        load_huggingface(directory, ("article", "highlights"))


def test_malformed_stories_name_the_file_or_the_url_list_line(releases, tmp_path):
    directory = _copy(releases, "cnndm_stories", tmp_path)
    url_list = directory / "url_lists" / "all_val.txt"
    urls = url_list.read_text().splitlines()
    story = directory / "cnn" / "stories" / story_name(urls[0])
    story.write_text("An article without highlights.\n")
    with pytest.raises(TpreproError, match=rf"{story.name}: no @highlight"):
        load_stories(directory)
    url_list.write_text("\n".join([*urls, "https://example.org/missing"]) + "\n")
    story.unlink()
    with pytest.raises(TpreproError, match=r"all_val\.txt:1: no story file"):
        load_stories(directory)


def test_malformed_wikihow_csv_names_the_line(tmp_path):
    path = tmp_path / "wikihowAll.csv"
    path.write_text('headline,title,text\n"\nA.,",T1,"Body one."\n"\nB.,",T2\n', encoding="utf-8")
    with pytest.raises(TpreproError, match=r"wikihowAll\.csv:4: 2 fields, the header has 3"):
        load_wikihow(path, FRACTIONS)
    path.write_text("summary,name\nx,y\n", encoding="utf-8")
    with pytest.raises(TpreproError, match=r"wikihowAll\.csv:1: expected a header with headline, title, text"):
        load_wikihow(path, FRACTIONS)


def test_malformed_arxiv_line_names_file_and_line(releases, tmp_path):
    directory = _copy(releases, "arxiv", tmp_path)
    lines = (directory / "train.txt").read_text().splitlines()
    bad = json.loads(lines[2])
    bad["article_text"] = "one string instead of a list"
    (directory / "train.txt").write_text("\n".join([*lines[:2], json.dumps(bad), *lines[3:]]) + "\n")
    with pytest.raises(TpreproError, match=r"train\.txt:3: 'article_text' must be a list of strings"):
        load_arxiv(directory)


def test_shards_hold_document_summary_id_split(releases, tmp_path):
    rows = load_huggingface(releases["xsum"], ("document", "summary"))[TRAIN]
    write_dataset(rows, tmp_path / "train", rows_per_shard=30, dataset="xsum")
    dataset = open_dataset(tmp_path / "train", verify=True, schema=SCHEMA)
    assert len(dataset.files) == math.ceil(len(rows) / 30)
    assert list(iter_rows(dataset, ("document", "summary", "id", "split"))) == rows


# ---- the subword codec -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def codec(examples, tmp_path_factory):
    path = tmp_path_factory.mktemp("spm") / "spm.model"
    train_subwords([t for e in examples if e.split == TRAIN for t in (e.document, e.summary)], 300, path)
    return SubwordCodec.load(path, max_source_tokens=48, max_target_tokens=12)


def test_subword_round_trip_and_deterministic_model(examples, codec, tmp_path):
    """Text of the training split comes back (whitespace normalised); characters it never showed are unknown."""
    for e in (e for e in examples if e.split == TRAIN):
        for text in (e.summary, *e.document.split("\n")):
            assert codec.decode(codec.encode(text)) == " ".join(text.split())
    assert 50 < len(codec) <= 300 and codec.symbols[PAD_ID] == "<pad>"
    boundary = codec.symbols.index("\u2581")  # the word-boundary piece alone, as an untrained model repeats it
    words = codec.encode("the module")
    assert codec.decode([boundary, boundary, *words, boundary, boundary, boundary, *words]) == "the module the module"
    assert UNK_ID in codec.encode("\u2603")
    again = tmp_path / "again.model"
    train_subwords([t for e in examples if e.split == TRAIN for t in (e.document, e.summary)], 300, again)
    assert again.read_bytes() == codec.model_proto


def test_codec_truncates_and_frames_the_batch(examples, codec):
    rows = [(e.document, e.summary) for e in examples[:6]]
    batch = codec.collate(rows)
    assert batch.src.shape[1] <= 49 and batch.tgt_in.shape == batch.tgt_out.shape
    assert (batch.tgt_in[:, 0] == BOS_ID).all()
    for i, (document, summary) in enumerate(rows):
        ids = codec.encode(summary)[:12]
        assert batch.tgt_out[i, : len(ids) + 1].tolist() == [*ids, EOS_ID]
        src = batch.src[i][batch.src[i] != PAD_ID].tolist()
        assert src == [*codec.encode(document)[:48], EOS_ID]
    assert batch.n_tokens == sum(min(len(codec.encode(s)), 12) + 1 for _, s in rows)
    assert SubwordCodec.from_state(codec.state()).symbols == codec.symbols


def test_a_foreign_model_file_is_refused_by_name(tmp_path):
    path = tmp_path / "spm.model"
    path.write_bytes(b"not a sentencepiece model")
    with pytest.raises(TpreproError, match="spm.model: not a sentencepiece model"):
        SubwordCodec.load(path, 8, 8)


# ---- beam search -----------------------------------------------------------------------------------------
def tiny_model(codec, preset: str, seed: int = 0):
    torch.manual_seed(seed)
    cfg = resolve_model_config(preset, {"d_model": 32, "d_ff": 64, "d_role": 8, "dropout": 0.0})
    return build_model(cfg, **codec.model_sizes()).eval()


def greedy_ids(model, src, max_len):
    """greedy_decode's rows as token lists without the end symbol and padding."""
    rows = greedy_decode(model, src, BOS_ID, EOS_ID, max_len=max_len).tolist()
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in rows]


def test_beam_one_is_greedy(examples, codec):
    """For each model kind and a few seeds; the end symbol's embedding is tied to a token the model
    emits, so that some rows stop early and others run to max_len."""
    src = codec.encode_documents([e.document for e in examples[:8]])
    lengths = []
    for preset in ("summarization_transformer_tiny", "summarization_tpt_c_tiny", "summarization_tpt_d_tiny"):
        for seed in range(3):
            model = tiny_model(codec, preset, seed)
            emitted = greedy_ids(model, src, 10)[0][2]
            with torch.no_grad():
                model.embedding.tokens.weight[EOS_ID] = 1.05 * model.embedding.tokens.weight[emitted]
            expected_ids = greedy_ids(model, src, 10)
            assert beam_search(model, src, BOS_ID, EOS_ID, max_len=10, beam_size=1, alpha=0.6) == expected_ids
            lengths += [len(row) for row in expected_ids]
    assert min(lengths) < 10 and max(lengths) == 10


@pytest.mark.parametrize("options", [dict(beam_size=4, alpha=0.6), dict(beam_size=3, alpha=1.0, no_repeat_ngram=2)])
def test_beam_with_cache_equals_without(examples, codec, options):
    model = tiny_model(codec, "summarization_tpt_d_tiny", seed=1)
    src = codec.encode_documents([e.document for e in examples[8:14]])
    cached = beam_search(model, src, BOS_ID, EOS_ID, max_len=12, use_cache=True, **options)
    uncached = beam_search(model, src, BOS_ID, EOS_ID, max_len=12, use_cache=False, **options)
    assert cached == uncached and len(cached) == 6
    if options.get("no_repeat_ngram") == 2:
        for row in cached:
            bigrams = list(zip(row, row[1:]))
            assert len(bigrams) == len(set(bigrams))


def test_ngram_blocking_lists_the_tokens_that_repeat_an_ngram():
    assert sorted(_blocked_tokens([5, 6, 7, 5, 6], 3)) == [7]
    assert sorted(_blocked_tokens([5, 6, 5], 2)) == [6]
    assert sorted(_blocked_tokens([5, 6], 1)) == [5, 6]
    assert _blocked_tokens([5], 3) == []


def test_beam_search_finds_a_better_scoring_summary_than_greedy(examples, codec):
    """Wider beams never score worse than greedy under the same (length-penalised) objective."""
    model = tiny_model(codec, "summarization_transformer_tiny", seed=2)
    src = codec.encode_documents([e.document for e in examples[20:26]])

    def score(row_src, ids):
        tgt = torch.tensor([[BOS_ID, *ids, EOS_ID]])
        with torch.no_grad():
            log_probs = model(row_src[None], tgt[:, :-1]).log_softmax(-1)[0]
        total = float(log_probs.gather(1, tgt[0, 1:, None]).sum())
        return total / ((5 + len(ids) + 1) / 6) ** 0.6

    greedy = beam_search(model, src, BOS_ID, EOS_ID, max_len=40, beam_size=1, alpha=0.6)
    wide = beam_search(model, src, BOS_ID, EOS_ID, max_len=40, beam_size=5, alpha=0.6)
    for row_src, g, w in zip(src, greedy, wide):
        if EOS_ID not in (g[-1:]) and len(g) < 40 and len(w) < 40:
            assert score(row_src, w) >= score(row_src, g) - 1e-4


# ---- ROUGE ---------------------------------------------------------------------------------------------------
PAIRS = [("the cat sat on the mat", "a cat was sitting on the mat"),
         ("Returns the running processes.", "Return the list of running processes."),
         ("completely different words", "nothing in common here"),
         ("", "an empty prediction scores zero")]


def test_rouge_equals_rouge_score_directly():
    predictions, references = zip(*PAIRS)
    ours = rouge_f1(predictions, references)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for i, (prediction, reference) in enumerate(PAIRS):
        theirs = scorer.score(reference, prediction)
        for name in ROUGE_TYPES:
            assert ours[name][i] == pytest.approx(theirs[name].fmeasure)
    assert ours["rouge1"][2] == 0.0 and ours["rouge1"][1] > 0.5  # stemming: returns ~ return
    for name in ROUGE_TYPES:
        low, high = bootstrap_interval(ours[name], 0.95, 200, seed=3)
        assert low <= ours[name].mean() <= high
        assert bootstrap_interval(ours[name], 0.95, 200, seed=3) == (low, high)  # seeded
    assert bootstrap_interval(np.full(4, 0.25), 0.95, 200, seed=3) == (0.25, 0.25)  # no spread


# ---- the trainer's Adafactor and inverse-square-root option ----------------------------------------------
def config(**overrides) -> TrainConfig:
    settings = dict(steps=12, batch_size=8, lr=1e-2, betas=(0.9, 0.995), grad_clip=1.0, warmup_steps=4,
                    checkpoint_every=4, log_every=2, bucket_width=10**6, shuffle_buffer=16, read_rows=16, device="cpu", threads=1,
                    optimizer="adafactor", schedule="inverse_sqrt")
    return TrainConfig(**{**settings, **overrides})


def test_inverse_sqrt_schedule_peaks_after_warmup():
    c = config(warmup_steps=4)
    rates = [scheduled_lr(c, step) for step in range(16)]
    assert rates[3] == pytest.approx(1e-2) and rates[0] == pytest.approx(2.5e-3)
    assert rates[15] == pytest.approx(1e-2 * math.sqrt(4 / 16))
    assert scheduled_lr(config(warmup_steps=0), 8) == pytest.approx(1e-2 / 3)
    assert scheduled_lr(config(schedule="constant", warmup_steps=0), 8) == pytest.approx(1e-2)


def test_cosine_schedule_warms_up_then_falls_to_zero_at_the_last_step():
    c = config(schedule="cosine", warmup_steps=4, steps=12)  # 8 steps of cosine after the warm-up
    rates = [scheduled_lr(c, step) for step in range(12)]
    assert rates[:4] == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2])
    assert rates[7] == pytest.approx(5e-3)  # half-way through the decay: half the peak
    assert rates[11] == pytest.approx(0.0, abs=1e-12)
    assert all(a > b for a, b in zip(rates[3:], rates[4:]))  # strictly falling after the peak


def test_optimizer_and_schedule_are_validated_and_default_to_adam(tmp_path):
    from helpers import load_default_params

    params = load_default_params()
    params["summarization"]["train"]["optimizer"] = "sgd"
    with pytest.raises(TpreproError, match=r"summarization\.train\.optimizer: 'sgd' is not one of"):
        validate_params(params)
    assert TrainConfig.from_params(load_default_params()).optimizer == "adam"


def make_job(dataset, codec, steps: int = 12) -> TrainJob:
    cfg = resolve_model_config("summarization_tpt_d_tiny", {"d_model": 32, "d_ff": 64, "d_role": 8})
    return TrainJob(name="s", seed=5, model=cfg, config=config(steps=steps), files=dataset.files, vocab=codec,
                    data_fingerprint=dataset.fingerprint())


def test_adafactor_training_resumes_exactly(releases, codec, tmp_path):
    rows = load_huggingface(releases["xsum"], ("document", "summary"))[TRAIN]
    write_dataset(rows, tmp_path / "train", 40)
    dataset = open_dataset(tmp_path / "train", schema=SCHEMA)
    full = Trainer(make_job(dataset, codec), tmp_path / "a" / "ckpt.pt")
    assert isinstance(full.optimizer, torch.optim.Adafactor)
    full.fit()
    crashed = Trainer(make_job(dataset, codec), tmp_path / "b" / "ckpt.pt", callbacks=[CrashAt(10)])
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()
    resumed = Trainer(make_job(dataset, codec), tmp_path / "b" / "ckpt.pt")
    assert resumed.resumed_from == 8
    resumed.fit()
    assert_same_weights(full.model, resumed.model)
    states = zip(full.optimizer.state.values(), resumed.optimizer.state.values())
    for s_full, s_res in states:
        assert s_full.keys() == s_res.keys()
        for key in s_full:
            assert torch.equal(torch.as_tensor(s_full[key]), torch.as_tensor(s_res[key])), key


def test_default_optimizer_keeps_the_old_fingerprint_and_adafactor_changes_it(codec):
    """Checkpoints written before train.optimizer/schedule/batching existed (Adam, constant, buckets) still resume."""
    import hashlib
    from dataclasses import asdict

    cfg = resolve_model_config("summarization_tpt_d_tiny")
    adam = TrainJob(name="s", seed=5, model=cfg, config=config(optimizer="adam", schedule="constant",
                                                               batching="buckets"),
                    files=[], vocab=codec, data_fingerprint="d")
    settings = asdict(adam.config)
    old_train = {k: settings[k] for k in ("batch_size", "lr", "betas", "grad_clip", "warmup_steps", "bucket_width",
                                          "shuffle_buffer", "read_rows")}  # the settings fingerprinted back then
    old = {"seed": 5, "model": asdict(cfg), "train": old_train, "vocab": list(codec.symbols), "data": "d"}
    assert adam.fingerprint == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
    adafactor = TrainJob(name="s", seed=5, model=cfg, config=config(), files=[], vocab=codec, data_fingerprint="d")
    assert adafactor.fingerprint != adam.fingerprint


def run_evaluation(model: str, seed: int, predictions, references, role_sharpness=None):
    from tprepro.experiments.summarization.table import RunEvaluation

    f1 = rouge_f1(predictions, references)
    documents = pd.DataFrame({"id": [f"d{i}" for i in range(len(predictions))], **f1,
                              "reference": references, "prediction": predictions})
    return RunEvaluation(model, "xsum", seed, documents, role_sharpness)


BOOTSTRAP = {"confidence": 0.95, "resamples": 50, "seed": 1}


def test_table_puts_published_numbers_beside_the_reproduced_ones(tmp_path):
    from tprepro.experiments.summarization.table import read_published, summary_markdown, summary_table

    predictions, references = (list(x) for x in zip(*PAIRS))
    evals = [run_evaluation("transformer", 1, predictions, references),
             run_evaluation("tpt_d", 1, predictions[1:] + predictions[:1], references, role_sharpness=0.5)]
    table = summary_table(evals, ["transformer", "tpt_d"], ["xsum"], BOOTSTRAP)
    for row, run in zip(table.to_dict("records"), evals):
        values = run.documents["rouge1"].to_numpy()
        assert row["xsum.rouge1"] == 100 * values.mean()  # one seed: the mean over documents, exactly
        assert (row["xsum.rouge1_low"], row["xsum.rouge1_high"]) == tuple(
            100 * v for v in bootstrap_interval(values, 0.95, 50, 1))
        assert np.isnan(row["xsum.rouge1_sd"]) and row["xsum.seeds"] == 1 and row["xsum.n"] == 4
    path = tmp_path / "published.csv"
    path.write_text("model,dataset,rouge1,rouge2,rougeL,source\nTPT-d,xsum,1.5,2.5,3.5,a test file\n")
    markdown = summary_markdown(table, evals, read_published(str(path)), samples=1)
    assert "| TPT-d (published) | 1.50 | 2.50 | 3.50 |" in markdown
    assert "| Transformer (published) | – | – | – |" in markdown
    assert "Published numbers: a test file." in markdown and "| TPT-d | xsum | 0.500 |" in markdown
    assert f"- reference: {references[0]}" in markdown and "- Transformer: the cat sat on the mat" in markdown
    assert " ± " not in markdown  # one seed: no spread
    with pytest.raises(TpreproError, match="missing column"):
        path.write_text("model,dataset,rouge1\n")
        read_published(str(path))
    with pytest.raises(TpreproError, match="no evaluation of tpt_c on xsum"):
        summary_table(evals, ["tpt_c"], ["xsum"], BOOTSTRAP)


def test_table_averages_seeds_and_bootstraps_documents_averaged_over_seeds():
    from tprepro.experiments.summarization.table import summary_markdown, summary_table

    predictions, references = (list(x) for x in zip(*PAIRS))
    seeds = [run_evaluation("tpt_d", 2, predictions[1:] + predictions[:1], references, role_sharpness=0.25),
             run_evaluation("tpt_d", 1, predictions, references, role_sharpness=0.75)]
    row = summary_table(seeds, ["tpt_d"], ["xsum"], BOOTSTRAP).iloc[0]
    per_seed = np.stack([run.documents["rougeL"].to_numpy() for run in sorted(seeds, key=lambda r: r.seed)])
    assert row["xsum.rougeL"] == pytest.approx(100 * per_seed.mean())
    assert row["xsum.rougeL_sd"] == pytest.approx(100 * per_seed.mean(axis=1).std(ddof=1))
    assert (row["xsum.rougeL_low"], row["xsum.rougeL_high"]) == pytest.approx(
        tuple(100 * v for v in bootstrap_interval(per_seed.mean(axis=0), 0.95, 50, 1)))
    assert row["xsum.role_sharpness"] == 0.5 and row["xsum.seeds"] == 2
    markdown = summary_markdown(summary_table(seeds, ["tpt_d"], ["xsum"], BOOTSTRAP), seeds, None, samples=1)
    assert f"{row['xsum.rougeL']:.2f} ± {row['xsum.rougeL_sd']:.2f} [" in markdown
    assert "the mean over 2 seeds" in markdown
    assert "- TPT-d: the cat sat on the mat" in markdown  # seed 1's prediction
    other = run_evaluation("tpt_d", 3, predictions[:3], references[:3])
    with pytest.raises(TpreproError, match="seeds of tpt_d on xsum were evaluated on different documents"):
        summary_table([*seeds, other], ["tpt_d"], ["xsum"], BOOTSTRAP)


def test_params_name_the_summarization_key():
    from helpers import load_default_params

    params = load_default_params()
    params["summarization"]["datasets"]["wikihow"] = {"format": "csv", "path": None}
    with pytest.raises(TpreproError, match=r"summarization\.datasets\.wikihow\.format"):
        validate_params(params)
    params = load_default_params()
    params["summarization"]["datasets"]["gigaword"] = {"format": "huggingface", "path": None}
    with pytest.raises(TpreproError, match=r"summarization\.datasets\.gigaword\.path: required"):
        validate_params(params)


def test_predict_summarizes_each_document_with_a_trained_model(releases, codec, tmp_path):
    """`tprepro predict` on a summarization model prints a beam-searched summary per document."""
    rows = load_huggingface(releases["xsum"], ("document", "summary"))[TRAIN]
    write_dataset(rows, tmp_path / "train", 40)
    trainer = Trainer(make_job(open_dataset(tmp_path / "train", schema=SCHEMA), codec, steps=6), tmp_path / "ckpt.pt")
    trainer.fit()
    trainer.export(tmp_path / "model" / "model.pt")
    documents = [rows[0]["document"], rows[1]["document"]]
    result = subprocess.run([sys.executable, "-m", "tprepro", "predict", "--model-dir", str(tmp_path / "model"),
                             "--json", "--max-length", "12", *documents], env=tool_env(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    expected = summarize_documents(trainer.model.eval(), codec, documents, 64, 12, beam_size=4, alpha=0.6,
                                   no_repeat_ngram=3)
    assert [r["document"] for r in records] == documents and [r["summary"] for r in records] == expected


def test_a_missing_or_broken_evaluation_file_is_named(tmp_path):
    from tprepro.experiments.summarization.stages import read_run_evaluation

    evaluation = tmp_path / "tpt_d-s1.csv"
    with pytest.raises(TpreproError, match=r"tpt_d-s1\.documents\.csv: unreadable per-document ROUGE file"):
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    documents = "id,rouge1,rouge2,rougeL,reference,prediction\nd0,0.5,0,0.5,a b,\n"
    (tmp_path / "tpt_d-s1.documents.csv").write_text(documents)
    from tprepro.io import record_digest

    with pytest.raises(TpreproError, match=r"tpt_d-s1\.documents\.csv: no recorded digest"):  # required
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    record_digest(tmp_path / "tpt_d-s1.documents.csv")
    with pytest.raises(TpreproError, match=r"tpt_d-s1\.roles\.json: missing \(every evaluation writes it\)"):
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    (tmp_path / "tpt_d-s1.roles.json").write_text('{"role_sharpness": null}')  # a model without discrete roles
    run = read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    assert run.documents["prediction"].tolist() == [""] and run.role_sharpness is None  # empty, not NaN
    (tmp_path / "tpt_d-s1.roles.json").write_text('{"role_sharpness": 0.25')  # cut short
    with pytest.raises(TpreproError, match=r"tpt_d-s1\.roles\.json: not a role-sharpness file"):
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    (tmp_path / "tpt_d-s1.roles.json").write_text('{"role_sharpness": 0.25}')
    assert read_run_evaluation(evaluation, "tpt_d", "xsum", 1).role_sharpness == 0.25


@pytest.mark.parametrize("value, problem", [("2.5", "'2.5' is outside [0, 1]"), ("inf", "'inf' is not a finite number"),
                                            ("", "'' is not a finite number"), ("x", "'x' is not a finite number")])
def test_per_document_rouge_is_range_checked_and_digested(tmp_path, value, problem):
    from tprepro.experiments.summarization.stages import read_run_evaluation
    from tprepro.io import record_digest

    evaluation, documents = tmp_path / "tpt_d-s1.csv", tmp_path / "tpt_d-s1.documents.csv"
    documents.write_text(f"id,rouge1,rouge2,rougeL,reference,prediction\nd0,0.5,0,{value},a b,a\n")
    record_digest(documents)
    with pytest.raises(TpreproError, match=re.escape(f"{documents}: line 2, column 'rougeL': {problem}")):
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
    documents.write_text("id,rouge1,rouge2,rougeL,reference,prediction\nd0,0.5,0,0.5,a b,a\n")  # digest not updated
    with pytest.raises(TpreproError, match="its content changed after it was written"):
        read_run_evaluation(evaluation, "tpt_d", "xsum", 1)
