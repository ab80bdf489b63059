"""The Validation page's issue-36 section: the whole validation corpus, per source and per
regime, with the leave-one-source-out error beside the error with the shipped constants.

Computed at build time by costmodels.validation.report (the code of ``commatlas validate-llm``),
so no number is typed in. Only dev data appears.
"""

from __future__ import annotations

import math
from functools import cache

PLOT = "generated/plots/validation-llm-corpus.svg"

SOURCE_NAMES = {
    "vtrain": "vTrain single-node (A100, Megatron-DeepSpeed)",
    "narayanan": "Narayanan et al. SC'21 Table 1 (A100, Megatron-LM)",
    "korthikanti": "Korthikanti et al. 2022 (A100, Megatron-LM)",
    "torchtitan": "torchtitan (H100 / H200, FSDP2 x TP, compiled)",
    "nanotron": "Ultra-Scale Playbook TP scaling (H100, nanotron)",
    "llmfoundry": "llm-foundry MPT (A100 / H100, Composer + PyTorch FSDP)",
    "dgxc": "DGX Cloud recipes (H100, NeMo / Megatron-Core)",
}


def _pct(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.1f}%"


def _row(name: str, s: dict) -> str:
    return (f"| {name} | {s['rows']} | {_pct(s['mape_pct'])} | {_pct(s['loso_mape_pct'])} | "
            f"{_pct(s['inside_band_pct'])} | {_pct(s['loso_in_band_pct'])} | "
            f"{_pct(s['loso_in_held_band_pct'])} | {s['does_not_fit']} | {s['may_not_fit']} |")


HEAD = ["| | Runs | Error, shipped constants | Error, source held out (LOSO) | Inside band | "
        "LOSO error inside band | LOSO error inside band built without its source | "
        "Judged not to fit | May not fit |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip


@cache
def _report() -> dict:
    from costmodels.validation.report import validation_report

    return validation_report()


def corpus_plot() -> str:
    """Predicted against measured step time per source on log axes: the shipped constants and
    the leave-one-source-out prediction (where benchmarks/llm_loso.py stored it), y = x dashed."""
    import altair as alt
    import pandas as pd

    from commatlas.docs_site import charts

    points = []
    for r in _report()["rows"]:
        name = SOURCE_NAMES.get(r["source"], r["source"]).split(" (")[0]
        points.append({"source": name, "measured (s)": r["measured_s"],
                       "predicted (s)": r["predicted_s"], "constants": "shipped"})
        if r["loso_predicted_s"] is not None:
            points.append({"source": name, "measured (s)": r["measured_s"],
                           "predicted (s)": r["loso_predicted_s"],
                           "constants": "source held out (LOSO)"})  # fmt: skip
    frame = pd.DataFrame(points)
    scale = alt.Scale(type="log", nice=False, padding=6)
    base = alt.Chart(frame).encode(alt.X("measured (s):Q", scale=scale),
                                   alt.Y("predicted (s):Q", scale=scale, title="predicted (s)"))
    dots = base.mark_point(filled=True, size=18, opacity=0.55).encode(
        alt.Color("constants:N"), alt.Shape("constants:N"))  # fmt: skip
    diagonal = base.mark_line(color="gray", strokeDash=[4, 4]).encode(
        alt.Y("measured (s):Q", scale=scale, title="predicted (s)"))  # fmt: skip
    chart = alt.layer(diagonal, dots).properties(width=230, height=200).facet(
        facet=alt.Facet("source:N", title=None, sort=list(dict.fromkeys(frame["source"]))),
        columns=4).resolve_scale(x="independent", y="independent")  # fmt: skip
    return charts.svg(charts.configure(chart))


def corpus_section() -> list[str]:
    report = _report()
    lines = [
        "## Every dev training run, held out by source",
        "",
        "One loader (`costmodels/validation/corpus.py`) reads every dev training set into one "
        "table with regime tags. *Shipped constants* is the mean |predicted / measured - 1| "
        "of the step time with the constants as shipped (fitted with every source); *LOSO* "
        "refits every fitted constant without the source being predicted "
        "(`python benchmarks/llm_loso.py`), the number that says how the model does on runs "
        "it never saw. *Inside band*: the share of runs whose error is inside their "
        "`expected_error_pct`; the next two columns hold the held-out error against the band "
        "built from every source's held-out errors and against the band built without the "
        "run's own source (what a run from a source never seen gets: the honest coverage, "
        "target 90%). Every one of these runs trained, so every *judged not to fit* is a miss "
        "of the memory model; *may not fit* is within 5% above the usable memory. "
        "`commatlas validate-llm` prints the same tables.",
        "",
        "![Predicted against measured step time, per source](plots/validation-llm-corpus.svg)",
        "",
        "*Every dev run's predicted step time against the measured one, per source (log axes; "
        "dashed: predicted = measured): with the shipped constants, and with every fitted "
        "constant refitted without the source (the held-out prediction).*",
        "",
        *HEAD,
        *(_row(SOURCE_NAMES.get(s, s), v) for s, v in report["per_source"].items()),
        _row("**all**", report["all"]),
        "",
    ]
    for tag, groups in report["per_regime"].items():
        lines += [f"**Per {tag}**", "", *HEAD,
                  *(_row(value or "—", s) for value, s in groups.items()), ""]  # fmt: skip
    return lines
