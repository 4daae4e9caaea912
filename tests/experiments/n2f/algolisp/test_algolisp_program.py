"""Tree <-> command-sequence round trip (TP-N2F App. A.4 format)."""

import json
import random

import pytest

from tprepro.experiments.n2f.algolisp.generator import generate, mutate_tree, random_tree
from tprepro.experiments.n2f.algolisp.program import (
    decode_symbol,
    encode_symbol,
    text_to_tree,
    tree_to_text,
    tree_to_tuples,
    tuples_to_tree,
)
from tprepro.experiments.n2f.tuples import NO_ARG
from tprepro.errors import TpreproError

from helpers import release_file

RECORD = "algolisp/example_record.jsonl"  # one real record, under $TPREPRO_RELEASE_DATA


def _compact(program):
    return " ".join("(" + " ".join(t for t in item if t != NO_ARG) + ")" for item in program)


def test_paper_examples():
    assert _compact(tree_to_tuples(["map", "a", ["partial1", "b", "-"]])) == "(partial1 b -) (map a #0)"
    factorial = ["invoke1", ["lambda1", ["if", ["==", "arg1", "1"], "1", ["*", ["self", ["-", "arg1", "1"]], "arg1"]]], "a"]
    assert _compact(tree_to_tuples(factorial)) == (
        "(== arg1 1) (- arg1 1) (self #1) (* #2 arg1) (if #0 1 #3) (lambda1 #4) (invoke1 #5 a)"
    )
    assert all(len(item) == 4 for item in tree_to_tuples(factorial))


def test_real_record_round_trip():
    tree = json.loads(release_file(RECORD).read_text().splitlines()[0])["short_tree"]
    tuples = tree_to_tuples(tree)
    assert _compact(tuples).startswith("(digits arg1) (len #0) (== #1 1) (digits arg1) (reduce #3 0 +) (self #4)")
    assert tuples_to_tree(tuples) == tree
    assert text_to_tree(tree_to_text(tree)) == tree


def test_thousands_of_generated_round_trips():
    rng = random.Random(7)
    trees = [r["short_tree"] for r in generate(300, seed=3)]
    trees += [random_tree(rng, 5) for _ in range(2000)]
    trees += [mutate_tree(rng, random_tree(rng, 4)) for _ in range(1000)]
    for tree in trees:
        try:
            tuples = tree_to_tuples(tree)
        except TpreproError:
            assert any(len(node) > 4 for node in _calls(tree))  # only calls of more than 3 arguments
            continue
        assert tuples_to_tree(tuples) == tree
        assert text_to_tree(tree_to_text(tree)) == tree
        assert tree_to_tuples(tuples_to_tree(tuples)) == tuples


def _calls(tree):
    if isinstance(tree, list):
        yield tree
        for child in tree[1:]:
            yield from _calls(child)


def test_leaf_program_zero_arg_call_and_string_literals():
    assert tree_to_tuples("a") == [("<leaf>", "a", NO_ARG, NO_ARG)]
    assert tuples_to_tree(tree_to_tuples("a")) == "a"
    assert tuples_to_tree(tree_to_tuples(["int"])) == ["int"]
    tree = ["str_split", "s", '" "']
    text = tree_to_text(tree)
    assert text == 'str_split s "\\s" <none>'
    assert text_to_tree(text) == tree
    assert tree_to_text(["||", "x", "y"]) == "\\p\\p x y <none>"
    for literal in ['""', '" "', '"z"', "||", '"a|b\\c d"']:
        token = encode_symbol(literal)
        assert " " not in token and "|" not in token and decode_symbol(token) == literal


@pytest.mark.parametrize(
    "tuples",
    [
        [],
        [("map", "a", "#0", NO_ARG)],  # refers to itself
        [("len", "a", NO_ARG, NO_ARG), ("len", "b", NO_ARG, NO_ARG)],  # first tuple unused
        [("len", "a", NO_ARG, NO_ARG), ("+", "#0", "#0", NO_ARG)],  # used twice (strict)
        [("+", NO_ARG, "a", NO_ARG)],
        [("<leaf>", "a", NO_ARG, NO_ARG), ("len", "#0", NO_ARG, NO_ARG)],
        [("len", "#x", NO_ARG, NO_ARG)],
    ],
)
def test_malformed_sequences_are_rejected(tuples):
    with pytest.raises(TpreproError):
        tuples_to_tree(tuples)


def test_shared_references_allowed_on_request_and_bad_trees_rejected():
    tuples = [("len", "a", NO_ARG, NO_ARG), ("+", "#0", "#0", NO_ARG)]
    assert tuples_to_tree(tuples, allow_shared=True) == ["+", ["len", "a"], ["len", "a"]]
    for bad in (["choice", "a", "b", "c", "d"], ["+", "#1", "a"], ["+", "<none>", "c"], [], [["+"], "a"]):
        with pytest.raises(TpreproError):
            tree_to_tuples(bad)
