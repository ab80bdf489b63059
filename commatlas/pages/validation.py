"""The validation pages: predicted vs measured throughput, as tables and charts.

``validation_page``: Shi et al.'s 10GbE runs; ``megatron.megatron_page``: Megatron-LM's table.

Computed at build time by costmodels.validation (the same code as `commatlas validate-models`),
so the numbers on the page are never typed in.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from costmodels.validation import read_rows, validate

DATA = Path(__file__).resolve().parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"


@cache
def _validated(data: Path) -> tuple:
    """``costmodels.validation.validate`` of the measured rows, computed once per build."""
    return validate(read_rows(data))


def validation_page(data: Path = DATA) -> str:
    calibrations, checked, mape = _validated(data)
    lines = [
        "# Validation: predicted vs measured",
        "",
        "Shi et al. (IEEE Network 2021) measured seven lossless methods on 8 nodes x 4 GPUs over",
        "10 Gbit/s Ethernet (data: HKBU-HPML/ddl-benchmarks, `results/2020-05-29`). CommAtlas fits",
        "each network's effective bandwidths from the BSP rows only (latencies are the link",
        "presets), then predicts every row with the method's schedule over the H200-measured",
        "gradient ready times scaled to the testbed's step time. Rows marked *fit* were used for",
        "the fit; the MAPE counts only the others. Reproduce with `commatlas validate-models`.",
        "",
    ]
    for cal in calibrations:
        lines.append(
            f"- **{cal.network}**: inter-node {1 / cal.beta / 1e9:.3f} GB/s effective "
            f"(latency {cal.alpha * 1e6:.0f} us); intra-node {1 / cal.beta_intra / 1e9:.3f} GB/s "
            f"(latency {cal.alpha_intra * 1e6:.0f} us)."
        )
    lines += ["", f"**MAPE over the {sum(not c.used_for_fit for c in checked)} predicted rows: "
              f"{mape:.1f}%**", ""]  # fmt: skip
    lines += ["![Predicted against measured throughput](plots/validation.svg)", ""]
    lines += [
        "| Model | Method | GPUs | Measured (samples/s) | Predicted | Error |",
        "|---|---|---|---|---|---|",
    ]
    for c in checked:
        mark = " *fit*" if c.used_for_fit else ""
        lines.append(
            f"| {c.row.dnn} | {c.row.method} | {c.row.gpus} | {c.row.measured:.1f} | "
            f"{c.predicted:.1f} | {100 * c.error:+.1f}%{mark} |"
        )
    lines += [
        "",
        "Known gaps: BERT's 8-GPU rows are slower than its 4-GPU rows (the first configuration",
        "that crosses the network); ByteScheduler's measured 4-GPU all-reduce rows are slower",
        "than WFBP, which a communication model alone does not explain.",
        "",
    ]
    return "\n".join(lines)


def validation_plot(data: Path = DATA) -> str:
    """Predicted against measured throughput, one point per row, the y = x line for reference."""
    import altair as alt
    import pandas as pd

    from commatlas.pages import charts

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

    from commatlas.pages import charts

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
    from commatlas.pages.megatron import megatron_page

    return {
        "generated/validation.md": validation_page(),
        "generated/plots/validation.svg": validation_plot(),
        "generated/validation-llm.md": megatron_page(_megatron()),
        "generated/plots/validation-llm.svg": megatron_plot(),
    }
