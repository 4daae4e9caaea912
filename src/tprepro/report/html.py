"""A table's markdown as a standalone HTML page: the Snakemake report shows HTML inline (markdown
only as a download), so each table stage writes both.

Every HTML page the project writes goes through `markdown_page`, and text that came from data or a
model becomes text there, never markup: raw HTML in the markdown (`<script>`, `<img onerror=...>`)
is not passed through but shown as written, and markdown's links, images and autolinks are off (no
table writes any), so no element is created from a document or a prediction. Writers that put such
text into their markdown escape it with `markdown_text`, so the .md file shows it as written too.
"""

from __future__ import annotations

import html
import re

PAGE_STYLE = """
  body { font-family: sans-serif; margin: 1.5em; color: #222; }
  table { border-collapse: collapse; margin: 1em 0; }
  th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  th { background: #f0f0f0; }
"""  # every page's tables alike: a table stage's page and results/report.html (report/html_report.py)

_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
</body>
</html>
"""


# Python-Markdown's own processors that turn text into markup other than the tables' (raw HTML
# blocks and inline tags, links, images, autolinks); deregistered, their text stays text.
_MARKUP_PREPROCESSORS = ("html_block",)
_MARKUP_PATTERNS = ("html", "link", "image_link", "image_reference", "reference", "short_reference",
                    "short_image_ref", "autolink", "automail")
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|])")  # what Python-Markdown reads inside a line


def markdown_page(text: str, title: str) -> str:
    """`text` (markdown with pipe tables, as the table stages write it) rendered as an HTML page;
    any HTML in `text` is shown as text (the module's docstring)."""
    import markdown

    renderer = markdown.Markdown(extensions=["tables"])
    for name in _MARKUP_PREPROCESSORS:
        renderer.preprocessors.deregister(name)
    for name in _MARKUP_PATTERNS:
        renderer.inlinePatterns.deregister(name)
    return _PAGE.format(title=html.escape(title), style=PAGE_STYLE, body=renderer.convert(text))


def markdown_text(value: object) -> str:
    """`value` (text from data or a model) as markdown that shows it as written, on one line: its
    markdown punctuation backslash-escaped, `&`, `<` and `>` as HTML entities, line breaks as spaces."""
    line = " ".join(str(value).split())
    return html.escape(_MARKDOWN_PUNCTUATION.sub(r"\\\1", line), quote=False)
