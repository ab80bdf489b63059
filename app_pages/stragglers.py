"""Page: what waiting for the slowest worker costs, and what SSP, local SGD and backup workers buy.

Inputs (sidebar, all in the URL, keys ``sg_*``): one worker's step-time distribution (normal,
log-normal or shifted exponential by mean and cv, or measured times pasted as a list), the
number of workers p whose gradients make a step, SSP's staleness s, local SGD's period H, the
number of backup workers k, and the time of one synchronisation. Shows seconds per iteration of
each strategy against BSP (costmodels.stragglers), the fastest in one line, and the same over
worker counts from 1 to p.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.charts import draw, line_chart
from app_pages.markdown_text import escape_markdown
from app_pages.query_inputs import (
    Field,
    choice,
    float_between,
    int_between,
    range_help,
    seed,
    show_problems,
    text,
    write_back,
)
from app_pages.stragglers_compute import distribution, sweep, table
from app_pages.tables import show_table
from costmodels.formatting import format_number
from costmodels.limits import MAX_BACKUPS, MAX_PERIOD, MAX_STALENESS
from costmodels.stragglers.distributions import KINDS, MAX_CV, describe
from costmodels.units import parse_time

KIND_NAMES = {"normal": "normal", "lognormal": "log-normal",
              "shifted-exponential": "shifted exponential",
              "empirical": "measured times (pasted)"}  # fmt: skip
MAX_WORKERS = 65536
FIELDS = [
    Field("sg_dist", "lognormal", choice([*KINDS, "empirical"])),
    Field("sg_mean", "250 ms", text(40)),
    Field("sg_cv", 0.1, float_between(0.0, MAX_CV)),
    Field("sg_times", "", text(20_000)),
    Field("sg_workers", 64, int_between(1, MAX_WORKERS)),
    Field("sg_staleness", 2, int_between(0, MAX_STALENESS)),
    Field("sg_period", 8, int_between(1, MAX_PERIOD)),
    Field("sg_backups", 4, int_between(0, MAX_BACKUPS)),
    Field("sg_sync", "0 ms", text(40)),
]
TABLE = {"speedup": "vs BSP (x)", "strategy": "strategy", "setting": "setting",
         "iteration_ms": "iteration (ms)", "overhead_pct": "straggler overhead (%)"}  # fmt: skip
MORE = {"method": "how the expectation is computed"}


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.selectbox("Step-time distribution", list(KIND_NAMES), format_func=KIND_NAMES.get,
                  key="sg_dist")  # fmt: skip
    if st.session_state["sg_dist"] == "empirical":
        bar.text_area("Measured step times", key="sg_times",
                      help="one per line or comma-separated, each with its unit ('251 ms'), "
                      "or bare numbers after a line 'unit: ms'",
                      placeholder="251 ms, 248 ms, 262 ms, ...")  # fmt: skip
    else:
        bar.text_input("Mean step time", key="sg_mean", help="one worker's, e.g. 250 ms")
        bar.number_input("Coefficient of variation (cv)", min_value=0.0, max_value=MAX_CV,
                         step=0.05, format="%.3g", key="sg_cv",
                         help="standard deviation / mean; at most 0.3 for normal, 1 for "
                         "shifted exponential and log-normal")  # fmt: skip
    bar.number_input("Workers p", min_value=1, max_value=MAX_WORKERS, step=1, key="sg_workers",
                     help=range_help(1, MAX_WORKERS, "whose gradients make one step"))  # fmt: skip
    bar.number_input("SSP staleness s", min_value=0, max_value=MAX_STALENESS, step=1,
                     key="sg_staleness",
                     help="clocks the fastest may run ahead; 0 is BSP")  # fmt: skip
    bar.number_input("Local SGD period H", min_value=1, max_value=MAX_PERIOD, step=1,
                     key="sg_period", help="local steps between two averages")  # fmt: skip
    bar.number_input("Backup workers k", min_value=0, max_value=MAX_BACKUPS, step=1,
                     key="sg_backups",
                     help="extra machines; the first p gradients count")  # fmt: skip
    bar.text_input("Synchronisation time", key="sg_sync",
                   help="one all-reduce or push/pull, not overlapped with compute, "
                   "e.g. 20 ms")  # fmt: skip
    write_back(FIELDS)
    return problems


@st.cache_data(max_entries=32, show_spinner="Computing the order statistics ...")
def computed(step, workers: int, staleness: int, period: int, backups: int,
             sync_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    args = (step, workers, staleness, period, backups, sync_s)
    return table(*args), sweep(*args)


def caption(step_info: dict, workers: int, backups: int, sync_s: float) -> str:
    what = KIND_NAMES[step_info["name"]]
    extra = f" from {step_info['samples']} measured values" if "samples" in step_info else ""
    return (
        f"{workers} workers, each step {what}{extra}: mean "
        f"{format_number(step_info['mean_s'] * 1e3)} ms, cv {format_number(step_info['cv'])}, "
        "independent across workers and steps. Backup workers run "
        f"{workers + backups} machines and keep the first {workers} gradients. One "
        f"synchronisation ({format_number(sync_s * 1e3)} ms) is not overlapped with compute: "
        "BSP and backup workers pay it every step, local SGD once per H steps, SSP workers "
        "their own push/pull every clock. Time per iteration only: extra iterations to the same "
        "accuracy (staleness, local drift, dropped gradients) are not counted."
    )


def main() -> None:
    st.title("Stragglers: BSP vs SSP, local SGD and backup workers")
    problems = sidebar()
    show_problems(problems)
    state = st.session_state
    try:
        step = distribution(state["sg_dist"], state["sg_mean"], float(state["sg_cv"]),
                            state["sg_times"])  # fmt: skip
        sync_s = parse_time(state["sg_sync"], "Synchronisation time")
        workers, backups = int(state["sg_workers"]), int(state["sg_backups"])
        frame, curves = computed(step, workers, int(state["sg_staleness"]),
                                 int(state["sg_period"]), backups, sync_s)  # fmt: skip
    except ValueError as exc:  # bounds of costmodels.limits included: one line, no traceback
        st.error(escape_markdown(exc))
        return
    st.caption(caption(describe(step), workers, backups, sync_s))
    best = frame.sort_values("iteration_ms").iloc[0]
    bsp_ms = frame["iteration_ms"].iloc[0]
    if best["strategy"] == "BSP":
        st.info(f"BSP is already the fastest here: {format_number(bsp_ms)} ms per iteration.")
    else:
        st.success(
            f"Fastest per iteration: {best['strategy']} ({best['setting']}), "
            f"{format_number(best['iteration_ms'])} ms, {format_number(best['speedup'])}x BSP's "
            f"{format_number(bsp_ms)} ms."
        )
    show_table(frame, TABLE, more=MORE, more_label="How each number is computed", key="strategy")
    st.subheader(f"Time per iteration from 1 to {workers} workers")
    draw(line_chart(curves, "iteration_ms", "ms per iteration"))
    st.caption(
        "straggler overhead = time per iteration / the time if every step took the mean, - 1. "
        "BSP and backup workers: expected order statistics (exact for the shifted exponential "
        "and a measured list, numerical integrals otherwise); local SGD: the slowest sum of H "
        "steps; SSP: a mean-field estimate, within 2% of a discrete-event simulation for "
        "cv <= 0.3 (costmodels/stragglers/ssp.py)."
    )


main()
