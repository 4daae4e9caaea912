"""MathQA release loader, parquet round trip and the tuple-program conversion on real data."""

import json

import pytest

from tprepro.experiments.n2f.tuples import NO_ARG, parse_program
from tprepro.errors import TpreproError
from tprepro.experiments.n2f.mathqa.program import (
    THIRD_ARG, formula_to_program, ops_to_tuples, parse_linear_formula, program_to_formula, tuples_to_ops,
)
from tprepro.experiments.n2f.mathqa.release import COLUMNS, SCHEMA, load_release, read_parquet, write_parquet

from helpers import release_file



@pytest.fixture(scope="module")
def release_rows():
    return {split: load_release(release_file(f"mathqa/{split}.json"), split) for split in ("dev", "test")}


def test_loader_reads_every_record(release_rows):
    assert len(release_rows["dev"]) == 4475 and len(release_rows["test"]) == 2985
    first = release_rows["dev"][0]
    assert first["id"] == "dev-0" and first["split"] == "dev"
    assert first["question"].startswith("a multiple choice test consists of 4 questions")
    assert first["answer"] == "power n1 n0"
    assert first["linear_formula"] == "power(n1,n0)|"
    assert first["correct"] == "c" and first["options"].startswith("a ) 24")
    assert list(first) == list(COLUMNS)


def test_every_record_round_trips(release_rows):
    for rows in release_rows.values():
        for row in rows:
            program = parse_program(row["answer"], arity=2)
            assert program_to_formula(row["answer"]) == row["linear_formula"].rstrip("|"), row["id"]
            assert all(len(item) == 3 for item in program)


def test_parquet_round_trip(release_rows, tmp_path):
    path = tmp_path / "mathqa" / "dev.parquet"
    write_parquet(release_rows["dev"], path)
    assert read_parquet(path) == release_rows["dev"]
    import pyarrow.parquet as pq

    assert pq.read_schema(path).names == SCHEMA.names
    assert not list(path.parent.glob(".*tmp"))


def test_write_parquet_rejects_bad_rows(tmp_path):
    with pytest.raises(TpreproError, match="row 0"):
        write_parquet([{"id": "x"}], tmp_path / "bad.parquet")
    assert not (tmp_path / "bad.parquet").exists()


def test_loader_errors_name_file_record_and_key(tmp_path):
    records = json.loads((release_file("mathqa/dev.json")).read_text())[:3]
    del records[2]["options"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(records))
    with pytest.raises(TpreproError, match=r"broken\.json: record 2: missing key 'options'"):
        load_release(path, "dev")
    records = json.loads((release_file("mathqa/dev.json")).read_text())[:2]
    records[1]["linear_formula"] = "add(n0,#3)"
    path.write_text(json.dumps(records))
    with pytest.raises(TpreproError, match=r"record 1: key 'linear_formula'.*add\(n0,#3\)"):
        load_release(path, "dev")
    path.write_text("{not json")
    with pytest.raises(TpreproError, match="broken.json"):
        load_release(path, "dev")


def test_tuple_conversion_pads_and_splits_ternary_operations():
    formula = "volume_rectangular_prism(n0,n1,n2)|divide(#0,const_2)|quadrilateral_area(#1,n3,#0)|sqrt(#2)|"
    program = parse_program(formula_to_program(formula), arity=2)
    assert program == [
        ("volume_rectangular_prism", "n0", "n1"), (THIRD_ARG, "n2", NO_ARG),
        ("divide", "#1", "const_2"),
        ("quadrilateral_area", "#2", "n3"), (THIRD_ARG, "#1", NO_ARG),
        ("sqrt", "#4", NO_ARG),
    ]
    assert program_to_formula(formula_to_program(formula)) == formula.rstrip("|")
    assert tuples_to_ops(ops_to_tuples(parse_linear_formula(formula))) == parse_linear_formula(formula)


@pytest.mark.parametrize("formula", [
    "", "|", "add(n0,n1", "add(n0)", "sqrt(n0,n1)", "foo(n0,n1)", "add(n0,#0)", "add(n0,#5)|",
    "add(n0,x1)", "add(n0,n1)||sqrt(#0)", "add(n0, n1)",
])
def test_malformed_formulas_raise_naming_the_formula(formula):
    with pytest.raises(TpreproError, match="linear formula"):
        parse_linear_formula(formula)


@pytest.mark.parametrize("program", [
    [("third_arg", "n0", NO_ARG)],
    [("triangle_perimeter", "n0", "n1")],
    [("triangle_perimeter", "n0", "n1"), ("add", "n0", "n1")],
    [("add", "n0", "n1"), ("triangle_perimeter", "#0", "n1"), ("third_arg", "#1", NO_ARG)],  # #1 is a head
    [("add", "n0", NO_ARG)],
    [("sqrt", NO_ARG, "n0")],
    [("add", "n0", "#0")],
    [("nope", "n0", "n1")],
])
def test_malformed_tuple_programs_raise(program):
    with pytest.raises(TpreproError):
        tuples_to_ops(program)
