"""Static SVG charts for the site: Altair specifications rendered by vl-convert at build time.

The site must work offline and build with MkDocs Material as well as Zensical, so charts are
plain ``<img>`` SVG files (no Vega runtime, no web fonts: vl-convert writes ``<text>`` elements
in a generic sans-serif family). One look for every chart: :func:`style`.
"""

from __future__ import annotations

import altair as alt
import vl_convert

WIDTH = 420
HEIGHT = 220
FONT = "sans-serif"


def configure(chart: alt.TopLevelMixin, legend_columns: int = 3) -> alt.TopLevelMixin:
    """The site's chart look (generic fonts, a legend below the plot), for any chart, also a
    compound one (concatenated, layered, faceted), whose parts set their own sizes."""
    return (
        chart.configure(font=FONT, background="white")
        .configure_legend(orient="bottom", columns=legend_columns, labelLimit=260, title=None)
        .configure_axis(labelFontSize=11, titleFontSize=12, grid=True)
    )


def style(chart: alt.TopLevelMixin, width: int = WIDTH, height: int = HEIGHT) -> alt.TopLevelMixin:
    """:func:`configure` for a single chart of a fixed size."""
    return configure(chart.properties(width=width, height=height))


def svg(chart: alt.TopLevelMixin) -> str:
    """The chart as SVG text (deterministic for the same data, so unchanged pages stay put)."""
    return vl_convert.vegalite_to_svg(chart.to_dict())


def image(alt_text: str, path: str, caption: str = "") -> list[str]:
    """Markdown lines showing an SVG at ``path`` (relative to the page), with a caption."""
    lines = [f"![{alt_text}]({path})", ""]
    if caption:
        lines += [f"*{caption}*", ""]
    return lines
