"""results/report.html: one self-contained page with every reported output (the tables, figures and
interpretation figures the stages declare `Reported`), each under its caption from workflow/report/,
in sections by category; written by the `report` stage, so Snakemake and DVC runs both refresh it.

What it shows is what `snakemake --report` shows of the same outputs: the table pages inline, CSV
tables as tables, PNG figures (a folder: its PNG figures) and the captions (reStructuredText, Jinja's
`{{ snakemake.wildcards.<name> }}` filled in). What it leaves out is Snakemake's own (the job graph,
per-job runtimes and provenance) and the outputs its stage does not depend on (experiments/html_report:
LEFT_OUT, the N2F interpretation, whose folder is absent when n2f.tasks is empty). Images are embedded, so the file is complete on its own. Text from
a table page comes through `report.html.markdown_page`, which already shows data as text.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from tprepro.report.html import PAGE_STYLE

_BODY = re.compile(r"<body>(.*)</body>", flags=re.S)


@dataclass(frozen=True)
class Reported:
    """One output in the report: its file (or folder of figures), caption file and section."""

    path: Path
    caption: Path  # a workflow/report/*.rst file
    category: str
    wildcards: dict[str, str] = field(default_factory=dict)  # the job's, for the caption's {{ snakemake.wildcards }}


def caption_html(caption: Path, wildcards: dict[str, str]) -> str:
    """The caption file as HTML: Jinja's variables filled in as Snakemake's report does, then docutils."""
    import jinja2
    from docutils.core import publish_parts

    text = jinja2.Template(caption.read_text(encoding="utf-8")).render(
        snakemake=SimpleNamespace(wildcards=SimpleNamespace(**wildcards)))
    return publish_parts(text, writer_name="html5", settings_overrides={"report_level": 5})["body"]


def content_html(path: Path) -> str:
    """An output as HTML: a table page's body, a CSV as a table, a PNG (a folder: its PNGs) embedded."""
    if path.is_dir():
        return "\n".join(figure(png) for png in sorted(path.glob("*.png")))
    if path.suffix == ".html":
        found = _BODY.search(path.read_text(encoding="utf-8"))
        return found.group(1) if found else ""
    if path.suffix == ".csv":
        import pandas as pd

        return pd.read_csv(path).to_html(index=False, escape=True, border=0)
    if path.suffix == ".png":
        return figure(path)
    return f"<p><code>{html.escape(str(path))}</code></p>"


def figure(png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(png.name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(str(png))}</figcaption></figure>")


def report_page(title: str, introduction: Path, outputs: list[Reported]) -> str:
    """The page: `introduction` (reStructuredText), then one section per category, in the order first met,
    each output as its caption and content; an output that is missing is named as missing."""
    sections: dict[str, list[str]] = {}
    for output in outputs:
        body = (content_html(output.path) if output.path.exists()
                else f"<p><em>{html.escape(str(output.path))}: missing</em></p>")
        sections.setdefault(output.category, []).append(
            f'<div class="output"><h3>{html.escape(str(output.path))}</h3>'
            f"{caption_html(output.caption, output.wildcards)}{body}</div>")
    contents = "".join(f'<li><a href="#section-{index}">{html.escape(name)}</a></li>'
                       for index, name in enumerate(sections))
    body = "".join(f'<h2 id="section-{index}">{html.escape(name)}</h2>' + "".join(parts)
                   for index, (name, parts) in enumerate(sections.items()))
    return (f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{PAGE_STYLE} img {{ max-width: 100%; }} figure {{ margin: 1em 0; }}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>{caption_html(introduction, {})}<ul>{contents}</ul>{body}\n</body>\n</html>\n")
