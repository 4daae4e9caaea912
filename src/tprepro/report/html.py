"""A table's markdown as a standalone HTML page: the Snakemake report shows HTML inline (markdown
only as a download), so each table stage writes both."""

from __future__ import annotations

import html

_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
  body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
  table {{ border-collapse: collapse; margin: 1em 0; }}
  th, td {{ border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: right; }}
  th:first-child, td:first-child {{ text-align: left; }}
  th {{ background: #f0f0f0; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""


def markdown_page(text: str, title: str) -> str:
    """`text` (markdown with pipe tables, as the table stages write it) rendered as an HTML page."""
    import markdown

    return _PAGE.format(title=html.escape(title), body=markdown.markdown(text, extensions=["tables"]))
