"""`dvc plots show` without a network: an HTML template that carries Vega, Vega-Lite and vega-embed.

DVC's default page loads those libraries from a CDN, so offline (a cluster node, CI) it is
blank. `.dvc/config` names this template (`plots.html_template = offline_plots.html`, relative
to .dvc/); `make install` writes it with `tprepro plots-template`. The libraries come from the
vl-convert-python wheel, which bundles them; charts render as SVG (countable marks, crisp
when zoomed) instead of vega-embed's default canvas.
"""

from __future__ import annotations

from pathlib import Path

from tprepro.io import atomic_write_text

DEFAULT_TEMPLATE = Path(".dvc/offline_plots.html")

# Runs inside the bundle: vega-embed as the global that DVC's plot divs call, drawing SVG.
_SNIPPET = """
window.vega = vega;
window.vegaLite = vegaLite;
window.vegaEmbed = (element, spec, options) => vegaEmbed(element, spec, {renderer: "svg", ...(options || {})});
"""

_PAGE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>tprepro: DVC plots</title>
    <script type="text/javascript">
{bundle}
    </script>
    <style>
        body { font-family: sans-serif; }
        table { border-spacing: 15px; }
    </style>
</head>
<body>
    <h1>tprepro: DVC plots</h1>
    {plot_divs}
</body>
</html>
"""


def template() -> str:
    """The page: DVC fills `{plot_divs}` (and `{refresh_tag}`) by plain text replacement."""
    import vl_convert

    bundle = vl_convert.javascript_bundle(_SNIPPET)
    return _PAGE.replace("{bundle}", bundle)


def write_template(path: Path = DEFAULT_TEMPLATE) -> Path:
    atomic_write_text(path, template())
    return path
