"""Output times follow content: a byte-identical rewrite gets its recorded mtime back, a changed output keeps
its new one (real files and folders, a real ledger)."""

import json
import os

from tprepro.output_times import TIMESTAMP, content_digest, settle

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
    assert settle([vocab, shards], ledger) == []  # first seen: recorded as they are
    (tmp_path / "vocab.json").write_text('{"a": 1}')  # the same bytes, written now (dvc checkout, a rerun)
    (tmp_path / "shards" / TIMESTAMP).touch()
    assert settle([vocab, shards], ledger) == [vocab, shards]
    assert os.stat(vocab).st_mtime_ns == OLD
    assert os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns == OLD  # the time Snakemake reads for a folder


def test_a_changed_output_keeps_its_new_time_and_is_recorded(tmp_path):
    ledger = tmp_path / "ledger.json"
    vocab, shards = _made(tmp_path)
    settle([vocab, shards], ledger)
    (tmp_path / "shards" / "part-1.parquet").write_bytes(b"more rows")
    (tmp_path / "shards" / TIMESTAMP).touch()
    now = os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns
    assert settle([vocab, shards], ledger) == []
    assert os.stat(os.path.join(shards, TIMESTAMP)).st_mtime_ns == now > OLD
    assert json.loads(ledger.read_text())[shards] == {"digest": content_digest(shards), "mtime_ns": now}


def test_a_folders_content_is_its_files_not_the_lock_or_the_timestamp(tmp_path):
    _, shards = _made(tmp_path)
    before = content_digest(shards)
    (tmp_path / "shards" / "trainer.lock").write_text("pid 1")
    assert content_digest(shards) == before
    (tmp_path / "shards" / "part-0.parquet").rename(tmp_path / "shards" / "part-9.parquet")
    assert content_digest(shards) != before  # names are content too


def test_missing_outputs_are_skipped_and_a_damaged_ledger_is_started_again(tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text("{not json")
    vocab, _ = _made(tmp_path)
    assert settle([vocab, str(tmp_path / "not-made-yet")], ledger) == []
    assert set(json.loads(ledger.read_text())) == {vocab}


def test_what_is_not_content_is_what_dvc_ignores():
    """A folder's content is the same for the ledger as for DVC's hash of it (.dvcignore, declared there)."""
    from helpers import REPO
    from tprepro.output_times import NOT_CONTENT

    lines = (REPO / ".dvcignore").read_text().splitlines()
    assert {line.strip() for line in lines if line.strip() and not line.startswith("#")} == NOT_CONTENT
