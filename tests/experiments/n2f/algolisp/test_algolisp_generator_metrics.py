"""Generator determinism and noise; Acc / 50p-Acc / M-Acc on full and cleaned sets."""

import json

from tprepro.experiments.n2f.algolisp import release
from tprepro.experiments.n2f.algolisp.generator import TEMPLATES, generate
from tprepro.experiments.n2f.algolisp.interpreter import run_tests
from tprepro.experiments.n2f.algolisp.metrics import evaluate, is_clean, score_example, fraction_passed
from tprepro.experiments.n2f.algolisp.program import tree_to_text, tree_to_tuples

from helpers import release_file

RECORD = "algolisp/example_record.jsonl"  # one real record, under $TPREPRO_RELEASE_DATA


def test_generation_is_deterministic_byte_for_byte(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    release.write_jsonl(generate(150, seed=11), first)
    release.write_jsonl(generate(150, seed=11), second)
    assert first.read_bytes() == second.read_bytes()
    release.write_jsonl(generate(150, seed=12), second)
    assert first.read_bytes() != second.read_bytes()


def test_generated_records_follow_the_schema_and_load():
    records = generate(400, seed=5)
    assert {r["nodes"][0] for r in records} == set(TEMPLATES)  # every template is drawn
    for record in records:
        assert set(record) == {"text", "short_tree", "args", "return_type", "tests", "funcs", "tags", "nodes"}
        assert len(record["tests"]) == 10 and record["funcs"] == [] and record["tags"] == []
        assert json.loads(json.dumps(record)) == record
    path_rows = [release.record_to_row(r, "train", i) for i, r in enumerate(records)]
    assert all(" " not in tok for row in path_rows for item in row["answer"].split(" | ") for tok in item.split(" "))


def test_noise_share_makes_the_cleaned_set_smaller():
    records = generate(500, seed=2, noise_rate=0.1)
    clean = [r for r in records if is_clean(r)]
    share = 1 - len(clean) / len(records)
    assert 0.05 < share < 0.16, share
    assert all(is_clean(r) for r in generate(100, seed=2, noise_rate=0.0))


def test_metrics_on_gold_wrong_and_partial_predictions():
    record = json.loads(release_file(RECORD).read_text().splitlines()[0])
    gold = tree_to_tuples(record["short_tree"])
    assert score_example(record, gold) == {"passed": 1.0, "acc": True, "acc50": True, "exact": True}
    assert fraction_passed(record, tree_to_text(record["short_tree"])) == 1.0
    assert fraction_passed(record, "len #3 <none> <none>") == 0.0  # unparsable
    assert fraction_passed(record, [("foo", "a", "<none>", "<none>")]) == 0.0  # unknown function
    # "0 below 10, else 1": wrong only on a = 28 (two replacements), so 9 of 10 tests pass.
    guess = tree_to_tuples(["if", ["<", "a", "10"], "0", "1"])
    by_hand = sum((0 if t["input"]["a"] < 10 else 1) == t["output"] for t in record["tests"]) / 10
    assert fraction_passed(record, guess) == by_hand == 0.9
    assert score_example(record, guess) == {"passed": 0.9, "acc": False, "acc50": True, "exact": False}
    assert score_example(record, tree_to_tuples(["len", ["digits", "a"]]))["acc50"] is False


def test_aggregate_full_and_cleaned():
    records = generate(60, seed=9, noise_rate=0.3)
    gold = [tree_to_tuples(r["short_tree"]) for r in records]
    result = evaluate(records, gold)
    n_clean = sum(is_clean(r) for r in records)
    assert result["full"]["n"] == 60 and result["cleaned"]["n"] == n_clean < 60
    assert result["full"]["m_acc"] == 1.0 and result["cleaned"]["acc"] == 1.0
    assert result["full"]["acc"] == n_clean / 60
    passed = [sum(run_tests(r["short_tree"], r["tests"], r["args"])) for r in records]
    assert result["full"]["acc50"] == sum(p >= 5 for p in passed) / 60
    empty = evaluate(records, ["" for _ in records])
    assert empty["full"]["acc"] == empty["full"]["acc50"] == empty["full"]["m_acc"] == 0.0
