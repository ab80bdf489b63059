"""The validation pages: predicted vs measured throughput, as tables and charts.

``validation_page``: Shi et al.'s 10GbE runs; ``megatron.megatron_page``: Megatron-LM's table.

Computed at build time by costmodels.dp.validation (the same code as `commatlas validate-models`),
so the numbers on the page are never typed in.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"


def _validated(data: Path) -> tuple:
    """``costmodels.dp.validation.validate`` of the measured rows, computed once per build."""
    from commatlas.docs_site.validation_dp import validated

    return validated(data)


def validation_page(data: Path = DATA) -> str:
    """The data-parallel page (commatlas/docs_site/validation_dp.py)."""
    from commatlas.docs_site.validation_dp import data_parallel_page

    return data_parallel_page(data)


def validation_plot(data: Path = DATA) -> str:
    """Predicted against measured throughput, one point per row, the y = x line for reference."""
    import altair as alt
    import pandas as pd

    from commatlas.docs_site import charts

    _, checked, _ = _validated(data)
    frame = pd.DataFrame(
        {
            "model": [c.row.dnn for c in checked],
            "measured": [c.row.measured for c in checked],
            "predicted": [c.predicted for c in checked],
            "use": ["fit" if c.used_for_fit else "predicted" for c in checked],
        }
    )
    top = float(max(frame.measured.max(), frame.predicted.max())) * 1.1
    scale = alt.Scale(type="log", domain=[max(1.0, float(frame.measured.min()) / 1.5), top])
    points = (
        alt.Chart(frame)
        .mark_point(filled=True, size=50)
        .encode(
            alt.X("measured:Q", scale=scale, title="measured (samples/s)"),
            alt.Y("predicted:Q", scale=scale, title="predicted (samples/s)"),
            alt.Color("model:N"),
            alt.Shape("use:N"),
        )
    )
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [scale.domain[0], top]}))
        .mark_line(color="gray", strokeDash=[4, 4])
        .encode(x="x:Q", y="x:Q")
    )
    return charts.svg(charts.style(alt.layer(diagonal, points), width=380, height=320))


@cache
def _megatron() -> tuple:
    from costmodels.llm.megatron_table import validate_megatron

    return validate_megatron()


def megatron_plot() -> str:
    """Published against predicted TFLOP/s per GPU for the Megatron-LM table rows."""
    import altair as alt
    import pandas as pd

    from commatlas.docs_site import charts

    rows, _ = _megatron()
    frame = pd.DataFrame(
        {
            "params (B)": [f"{r.run.params_billion:g}" for r in rows],
            "published": [r.published_tflops for r in rows],
            "predicted": [r.predicted_tflops for r in rows],
        }
    )
    melted = frame.melt("params (B)", var_name="source", value_name="TFLOP/s per GPU")
    chart = (
        alt.Chart(melted)
        .mark_bar()
        .encode(
            alt.X("params (B):N", sort=None, title="model size (billion parameters)"),
            alt.XOffset("source:N"),
            alt.Y("TFLOP/s per GPU:Q"),
            alt.Color("source:N"),
        )
    )
    return charts.svg(charts.style(chart, width=420, height=220))


def validation_files(tax: object = None) -> dict[str, str]:
    """Both validation pages and their charts (``tax`` unused: the data are measurements)."""
    from commatlas.docs_site.megatron import megatron_page

    return {
        "generated/validation.md": validation_page(),
        "generated/plots/validation.svg": validation_plot(),
        "generated/validation-llm.md": megatron_page(_megatron()),
        "generated/plots/validation-llm.svg": megatron_plot(),
        "generated/plots/validation-llm-vtrain.svg": _vtrain_plot(),
        **_corpus_files(),
        **_nccl_files(),
        **_serving_files(),
        **_seven_methods_files(),
    }


def _seven_methods_files() -> dict[str, str]:
    """The first survey's figure, predicted (issue 43): listed under Compare in mkdocs.yml."""
    from commatlas.docs_site.comparisons.seven_methods import seven_methods_page

    return seven_methods_page()


def _serving_files() -> dict[str, str]:
    from commatlas.docs_site.validation_serving import PLOT, serving_page, serving_plot

    return {"generated/validation-serving.md": serving_page(), PLOT: serving_plot()}


def _nccl_files() -> dict[str, str]:
    from commatlas.docs_site.validation_nccl import PLOT, nccl_page, nccl_plot

    return {"generated/validation-nccl.md": nccl_page(), PLOT: nccl_plot()}


def _corpus_files() -> dict[str, str]:
    from commatlas.docs_site.validation_corpus import PLOT, corpus_plot

    return {PLOT: corpus_plot()}


def _vtrain_plot() -> str:
    from commatlas.docs_site.validation_llm import vtrain_plot

    return vtrain_plot()
