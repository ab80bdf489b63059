"""The small plot on a record's page: its cost model's time against p and against n.

Both panels evaluate ``costmodels.get(id).evaluate`` for every variant at the site's reference
scenario (``commatlas.docs_site.scenario``): left, the time of one n = 100 MB exchange against the
number of workers; right, the time against the message size at p = 64. Models with a node
structure (a symbol ``g``) are drawn at whole nodes only (p = 8, 16, ...), where they apply, and
a model with requirements (``CostModel.requires``) only where they hold.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

import costmodels
from commatlas.docs_site import charts, scenario
from costmodels.symbols import SYMBOLS

P_FOR_SIZE_SWEEP = 64
SIZES = np.geomspace(1e3, 1e9, 25)  # 1 KB .. 1 GB


def worker_axis(model: costmodels.CostModel) -> np.ndarray:
    """2..512 (every integer to 8, then powers of two and a few between), or whole nodes."""
    if any(info.symbol == SYMBOLS["g"].symbol for info in model.symbols):
        return scenario.GPUS_PER_NODE * np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
    return np.unique(np.concatenate([np.arange(2, 9), 2 ** np.arange(3, 10), [12, 24, 48, 96]]))


def plot_data(model_id: str, bits: float | None = None) -> pd.DataFrame:
    """Rows (panel, variant, x, seconds) of both panels; the numbers the SVG draws."""
    model = costmodels.get(model_id)
    frames = []
    p = worker_axis(model)
    # The scenario's values do not depend on the variant: built once for all of them.
    over_p = scenario.symbol_values(model_id, p, scenario.MESSAGE_BYTES, bits)
    admitted = model.admits(**over_p)
    if not admitted.all():  # e.g. DualPipe exists for even p only: draw where it exists
        p = p[admitted]
        over_p = scenario.symbol_values(model_id, p, scenario.MESSAGE_BYTES, bits)
    over_n = scenario.symbol_values(model_id, P_FOR_SIZE_SWEEP, SIZES, bits)
    for variant in model.variants:
        by_p = model.evaluate(variant, **over_p)
        by_n = model.evaluate(variant, **over_n)
        frames.append(pd.DataFrame({"panel": "p", "variant": variant, "x": p, "seconds": by_p}))
        frames.append(pd.DataFrame({"panel": "n", "variant": variant, "x": SIZES, "seconds": by_n}))
    return pd.concat(frames, ignore_index=True)


def plot_svg(model_id: str, bits: float | None = None) -> str:
    """Two log-log panels, one line per variant, as SVG text."""
    data = plot_data(model_id, bits)
    data["ms"] = data["seconds"] * 1e3
    color = alt.Color("variant:N", title="variant")
    y = alt.Y("ms:Q", scale=alt.Scale(type="log"), title="time (ms)", axis=alt.Axis(format="~g"))
    by_p = (
        alt.Chart(data[data.panel == "p"])
        .mark_line(point=True)
        .encode(alt.X("x:Q", scale=alt.Scale(type="log", base=2), title="workers p"), y, color)
        .properties(title=f"n = {scenario.MESSAGE_BYTES / 1e6:g} MB", width=260, height=180)
    )
    by_n = (
        alt.Chart(data[data.panel == "n"])
        .mark_line()
        .encode(
            alt.X(
                "x:Q",
                scale=alt.Scale(type="log"),
                title="message bytes n",
                axis=alt.Axis(format="~s"),
            ),
            y,
            color,
        )
        .properties(title=f"p = {P_FOR_SIZE_SWEEP}", width=260, height=180)
    )
    return charts.svg(charts.configure(alt.hconcat(by_p, by_n)))


def caption(model_id: str) -> str:
    return (
        f"Time of `{model_id}` at the site's reference scenario: {scenario.describe()}; "
        f"other symbols as listed on the [scenario page](../generated/scenario.md). "
        "Computed from the formula above when the site is built."
    )
