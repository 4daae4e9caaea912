"""Text from data or a model is text in every HTML page (report/html.py): markup in a summarization
document and its prediction goes through the real `summarization-tables` stage into
results/tables/summarization.html, and headless Chromium creates no element from it and shows it as
written."""

import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import chromium, load_default_params, tool_env, write_params
from tprepro.experiments.summarization.table import DOCUMENT_COLUMNS
from tprepro.report.html import markdown_page, markdown_text
from tprepro.report.tables import write_digested_csv

# Each would run or load something if it became markup: a script and an image's onerror mark the body,
# an iframe loads a page; then a plain `<` and `&`, and markdown that would make a link and emphasis.
SCRIPT = "<script>document.body.setAttribute('data-injected', 'script')</script>"
IMAGE = "<img src=x onerror=\"document.body.setAttribute('data-injected', 'img')\">"
FRAME = "<iframe src=\"about:blank\"></iframe>"
REFERENCE = f"the reference {SCRIPT} says a < b & c"
PREDICTION = f"a prediction {IMAGE} {FRAME} [link](javascript:alert(1)) *not emphasis* AT&amp;T"


def write_evaluations(root, models) -> None:
    """Each model's evaluation (a row per ROUGE type) and per-document file as the evaluate stage writes
    them (digests beside them), and its role sharpness (null: no discrete roles)."""
    scores = {"rouge1": 0.5, "rouge2": 0.25, "rougeL": 0.5}
    for model in models:
        documents = pd.DataFrame([{"id": "doc<1>&", **scores, "reference": REFERENCE, "prediction": PREDICTION}],
                                 columns=list(DOCUMENT_COLUMNS))
        run = root / "summarization" / "eval" / "xsum" / f"{model}-s1"
        run.parent.mkdir(parents=True, exist_ok=True)
        write_digested_csv(documents, run.with_name(f"{run.name}.documents.csv"), float_format=None)
        write_digested_csv(pd.DataFrame([{"model": model, "seed": 1, "module": name, "split": "test", "n": 1,
                                          "correct": value, "accuracy": value} for name, value in scores.items()]),
                           run.with_name(f"{run.name}.csv"))
        run.with_name(f"{run.name}.roles.json").write_text('{"role_sharpness": null}')


@pytest.mark.slow  # a tprepro subprocess and Chromium
def test_markup_in_documents_and_predictions_is_shown_as_text(tmp_path):
    params = load_default_params()
    section = params["summarization"]
    section.update(seeds=[1], datasets={"xsum": {"format": "huggingface", "path": None}})
    section["report"].update(samples=1)
    write_params(tmp_path / "params.yaml", params)
    write_evaluations(tmp_path, section["models"])
    result = subprocess.run([sys.executable, "-m", "tprepro", "summarization-tables", "--params", "params.yaml",
                             "--eval-dir", "summarization/eval", "--table", "results/tables/summarization",
                             "--metrics", "results/summarization_metrics.json"],
                            cwd=tmp_path, env=tool_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    page = tmp_path / "results" / "tables" / "summarization.html"
    dom = chromium(page.as_uri(), tmp_path / "profile", budget_ms=3000)
    body = dom[dom.index("<body"):]
    assert re.match(r"<body>", body)  # no attribute set by a script or an onerror handler
    assert not re.search(r"<(script|img|iframe|a)\b", body)  # no element from the text
    assert "<em>" not in body  # markdown in the text is text too
    # The text is there as written (the DOM serialises a text node's <, > and & as entities).
    shown = {REFERENCE: f"reference: {REFERENCE}", PREDICTION: f"TPT-d: {PREDICTION}"}
    for text in shown.values():
        assert text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in body
    assert "<strong>xsum / doc&lt;1&gt;&amp;</strong>" in body
    markdown = (tmp_path / "results" / "tables" / "summarization.md").read_text()
    assert "<script" not in markdown and "<img" not in markdown and "<iframe" not in markdown


def test_raw_html_in_the_markdown_itself_is_not_passed_through():
    page = markdown_page(f"| a |\n|---|\n| {IMAGE} |\n\n{SCRIPT}\n\n<div>{FRAME}</div> a < b & c\n", "t</title><b>")
    assert not re.search(r"<(script|img|iframe|div|b)\b", page)
    assert "&lt;script&gt;" in page and "a &lt; b &amp; c" in page and "<title>t&lt;/title&gt;&lt;b&gt;</title>" in page
    assert "<table>" in page and "<td>" in page  # the tables' own markdown still renders


def test_markdown_text_keeps_data_on_one_line_and_escapes_markdown():
    assert markdown_text("a | b\n\n# c *d* `e` [f](g) <h> &") == r"a \| b # c \*d\* \`e\` \[f\](g) &lt;h&gt; &amp;"


@pytest.mark.slow  # tprepro subprocesses
@pytest.mark.parametrize("value, message", [
    ("1e6", "'1000000.0' is outside [0, 100]"), ("-5", "'-5.0' is outside [0, 100]"),
    ("nan", "'nan' is not a finite number"), ("abc", "'abc' is not a finite number"),
])
def test_the_published_numbers_file_is_range_checked_by_the_tables_stage(tmp_path, value, message):
    """Issue 46, gap 4: ROUGE 1e6, -5 or nan in `summarization.report.published` were printed as they are,
    "abc" was a raw ValueError; the real `summarization-tables` now refuses each, naming the file, line and
    column, exit 2, and writes no table."""
    params = load_default_params()
    section = params["summarization"]
    section.update(seeds=[1], datasets={"xsum": {"format": "huggingface", "path": None}})
    section["report"].update(samples=1, published="published.csv")
    write_params(tmp_path / "params.yaml", params)
    write_evaluations(tmp_path, section["models"])
    (tmp_path / "published.csv").write_text("model,dataset,rouge1,rouge2,rougeL,source\n"
                                            "TPT-d,xsum,30.5,10.25,25.0,a paper\n"
                                            f"Transformer,xsum,29.0,{value},24.0,a paper\n")
    result = subprocess.run([sys.executable, "-m", "tprepro", "summarization-tables", "--params", "params.yaml",
                             "--eval-dir", "summarization/eval", "--table", "results/tables/summarization",
                             "--metrics", "results/summarization_metrics.json"],
                            cwd=tmp_path, env=tool_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-3000:]
    assert f"published.csv: line 3, column 'rouge2': {message}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "results").exists()
