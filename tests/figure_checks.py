"""What a saved figure draws past its canvas (the autouse check of tests/conftest.py, and its own test)."""


def _within(inner, outer, slack: float = 0.0) -> bool:
    return (inner.x0 >= outer.x0 - slack and inner.y0 >= outer.y0 - slack and inner.x1 <= outer.x1 + slack
            and inner.y1 <= outer.y1 + slack)


def texts_off_the_canvas(fig) -> list[str]:
    """What `fig` draws past its canvas, by label: its drawn extent (ticks in view, legends, titles,
    unclipped labels; matplotlib's tight bounding box) against the canvas, the texts that overflow named."""
    renderer = fig.canvas.get_renderer()
    drawn, canvas = fig.get_tightbbox(renderer), fig.bbox_inches  # inches
    if _within(drawn, canvas, slack=0.01):
        return []
    texts = [fig._suptitle, *(text for ax in fig.axes for text in (ax.title, ax.xaxis.label, ax.yaxis.label)),
             *(text for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if legend
               for text in legend.get_texts())]
    named = [text.get_text() for text in texts if text is not None and text.get_text().strip()
             and not _within(text.get_window_extent(renderer), fig.bbox)]
    return named or [f"something drawn over {drawn.bounds} (x, y, width, height, inches) on a canvas of {canvas.bounds}"]
