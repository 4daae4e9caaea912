"""Output times follow content: a byte-identical rewrite gets its recorded mtime back unless what it is made
from is newer, a changed output keeps a new one (real files and folders, a real ledger)."""

import json
import os

import pytest

from tprepro.output_times import TIMESTAMP, Made, content_digest, settle

OLD = 1_700_000_000_000_000_000  # ns: when the outputs were made


def _made(tmp_path):
    """A file output and a folder output (with Snakemake's timestamp file), both made at OLD."""
    vocab = tmp_path / "vocab.json"
    vocab.write_text('{"a": 1}')
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-0.parquet").write_bytes(b"rows")
    (shards / TIMESTAMP).touch()
    for path in (vocab, shards / TIMESTAMP, shards):
        os.utime(path, ns=(OLD, OLD))
    return str(vocab), str(shards)


def test_a_byte_identical_rewrite_gets_its_recorded_time_back(tmp_path):
    ledger = tmp_path / "ledger.json"
    vocab, shards = _made(tmp_path)
    assert settle([Made((vocab, shards))], ledger) == []  # first seen: recorded as they are
    (tmp_path / "vocab.json").write_text('{"a": 1}')  # the same bytes, written now (dvc checkout, a rerun)
    (tmp_path / "shards" / TIMESTAMP).touch()
    assert settle([Made((vocab, shards))], ledger) == [vocab, shards]
    assert os.stat(vocab).st_mtime_ns == OLD
    assert os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns == OLD  # the time Snakemake reads for a folder


def test_a_changed_output_keeps_its_new_time_and_is_recorded(tmp_path):
    ledger = tmp_path / "ledger.json"
    vocab, shards = _made(tmp_path)
    settle([Made((vocab, shards))], ledger)
    (tmp_path / "shards" / "part-1.parquet").write_bytes(b"more rows")
    (tmp_path / "shards" / TIMESTAMP).touch()
    now = os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns
    assert settle([Made((vocab, shards))], ledger) == []
    assert os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns == now > OLD
    entry = json.loads(ledger.read_text())[shards]
    assert (entry["digest"], entry["mtime_ns"]) == (content_digest(shards), now)


def test_the_same_bytes_from_newer_inputs_keep_their_new_time(tmp_path):
    """A model changed (retrained elsewhere), its evaluation rerun and wrote the same bytes: given its old time
    back it would look older than the model, and Snakemake would rerun it at every invocation (issue 54, case 2)."""
    ledger = tmp_path / "ledger.json"
    model, evaluation = tmp_path / "model.pt", tmp_path / "eval.csv"
    model.write_bytes(b"weights")
    evaluation.write_text("accuracy\n0.5\n")
    os.utime(model, ns=(OLD, OLD))
    os.utime(evaluation, ns=(OLD + 10, OLD + 10))
    jobs = [Made((str(model),)), Made((str(evaluation),), (str(model),))]
    settle(jobs, ledger)
    model.write_bytes(b"weights moved by 1e-6")  # new content, now
    evaluation.write_text("accuracy\n0.5\n")  # the rerun: the same bytes, after the model
    rerun = os.stat(evaluation).st_mtime_ns
    assert settle(jobs, ledger) == []
    assert os.stat(evaluation).st_mtime_ns == rerun >= os.stat(model).st_mtime_ns
    assert settle(jobs, ledger) == [] and os.stat(evaluation).st_mtime_ns == rerun  # converged


def test_an_edit_in_place_inside_a_folder_moves_its_time(tmp_path):
    """A shard rewritten inside its folder moves neither the folder nor Snakemake's timestamp file: the ledger
    sees the file's time move, finds new content and moves the folder's time to now, so its readers rerun."""
    ledger = tmp_path / "ledger.json"
    _, shards = _made(tmp_path)
    settle([Made((shards,))], ledger)
    (tmp_path / "shards" / "part-0.parquet").write_bytes(b"other rows")
    settle([Made((shards,))], ledger)
    assert os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns > OLD


def test_new_content_at_an_older_time_is_moved_to_now(tmp_path):
    """An older version copied back with its time kept (cp -p, a hard-linked cache) is newer content for its readers."""
    ledger = tmp_path / "ledger.json"
    vocab, _ = _made(tmp_path)
    settle([Made((vocab,))], ledger)
    (tmp_path / "vocab.json").write_text('{"b": 2}')
    os.utime(vocab, ns=(OLD - 10, OLD - 10))
    settle([Made((vocab,))], ledger)
    assert os.stat(vocab).st_mtime_ns > OLD


def test_a_folders_content_is_its_files_not_the_lock_or_the_timestamp(tmp_path):
    _, shards = _made(tmp_path)
    before = content_digest(shards)
    (tmp_path / "shards" / "trainer.lock").write_text("pid 1")
    assert content_digest(shards) == before
    (tmp_path / "shards" / "part-0.parquet").rename(tmp_path / "shards" / "part-9.parquet")
    assert content_digest(shards) != before  # names are content too


@pytest.mark.parametrize("damaged", ["{not json", "[1, 2, 3]", '"a string"', '{"vocab.json": "a string"}',
                                     '{"vocab.json": {"digest": 1, "mtime_ns": 2}}'])
def test_missing_outputs_are_skipped_and_a_damaged_ledger_is_started_again(tmp_path, capsys, damaged):
    """A ledger that is not one (issue 54, case 3: valid JSON of another shape stopped every command with a
    TypeError) is started again, naming the file."""
    ledger = tmp_path / "ledger.json"
    ledger.write_text(damaged)
    vocab, _ = _made(tmp_path)
    assert settle([Made((vocab, str(tmp_path / "not-made-yet")))], ledger) == []
    assert set(json.loads(ledger.read_text())) == {vocab}
    assert f"{ledger}: " in capsys.readouterr().err


def test_what_is_not_content_is_what_dvc_ignores():
    """A folder's content is the same for the ledger as for DVC's hash of it (.dvcignore, declared there)."""
    from helpers import REPO
    from tprepro.output_times import NOT_CONTENT

    lines = (REPO / ".dvcignore").read_text().splitlines()
    assert {line.strip() for line in lines if line.strip() and not line.startswith("#")} == NOT_CONTENT
