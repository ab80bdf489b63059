"""The Compare page's sidebar: every input bound to the URL, plus the custom-method builder.

Kept apart from ``compare.py`` so the page reads as inputs -> numbers -> charts. The URL keys
are the field keys below (``workload``, ``params``, ``layers``, ``batch``, ``gpu``, ``step``,
``nodes``, ``gpus``, ``intra*``, ``inter*``, ``methods``, ``at``, ``gantt``).
"""

from __future__ import annotations

import streamlit as st

from app_pages.compare_methods import (
    ARCHITECTURES,
    COMPRESSIONS,
    DEFAULT_METHODS,
    MAX_METHODS,
    PRESET_METHODS,
    describe,
    parse_method,
    valid_label,
)
from app_pages.network_inputs import link_fields, link_widgets
from app_pages.query_inputs import (
    Field,
    choice,
    comma_list,
    int_between,
    join_list,
    seed,
    text,
)
from costmodels.collective_time import ALLREDUCE_ALGORITHMS
from costmodels.hardware import GPUS
from costmodels.predict import SCHEDULE_NAMES, Method
from costmodels.workloads import NAMED_WORKLOADS

CUSTOM_COUNT = "Custom: parameter count"
CUSTOM_LAYERS = "Custom: per-layer list"
WORKLOADS = [*NAMED_WORKLOADS, CUSTOM_COUNT, CUSTOM_LAYERS]
MEASURED = "Measured step time"
GPU_CHOICES = [*GPUS, MEASURED]

FIELDS = [
    Field("workload", "ResNet-50", choice(WORKLOADS)),
    Field("params", "25M", text(40)),
    Field("layers", "2.4M, 9.4M, 37.7M, 102.8M", text(60_000)),
    Field("batch", 32, int_between(1, 1_000_000)),
    Field("gpu", "H200 SXM", choice(GPU_CHOICES)),
    Field("step", "300 ms", text(40)),
    Field("nodes", 4, int_between(1, 4096)),
    Field("gpus", 8, int_between(1, 64)),
    *link_fields("intra", "NVLink 4 (H100)", "100 GB/s", "2 us"),
    *link_fields("inter", "100 GbE", "100 Gbit/s", "5 us"),
    Field("methods", list(DEFAULT_METHODS), comma_list(valid_label, MAX_METHODS), join_list),
    Field("at", 0, int_between(0, 10**7)),  # 0: the full cluster
    Field("gantt", "", text(80)),  # "": the first method
]


def sidebar() -> list[str]:
    """Draw the inputs; return the messages about URL values that were ignored."""
    problems = seed(FIELDS)
    bar = st.sidebar
    bar.header("Workload")
    bar.selectbox("Workload", WORKLOADS, key="workload")
    if st.session_state["workload"] == CUSTOM_COUNT:
        bar.text_input("Parameters", key="params", help="e.g. 25M, 1.3B, 7e9")
    if st.session_state["workload"] == CUSTOM_LAYERS:
        bar.text_area(
            "Parameters per layer", key="layers", help="forward order, comma separated: 4M, 1M"
        )
    bar.number_input("Batch size per GPU", min_value=1, max_value=1_000_000, key="batch")
    bar.selectbox("GPU", GPU_CHOICES, key="gpu", help="scales the measured H200 step")
    bar.text_input(
        "Measured step time", key="step", help="single-GPU forward+backward+update, e.g. 250 ms"
    )
    bar.header("Cluster")
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes")
    bar.number_input("GPUs per node", min_value=1, max_value=64, step=1, key="gpus")
    link_widgets("Intra-node link", "intra")
    link_widgets("Inter-node link", "inter")
    bar.header("Methods")
    chosen = list(st.session_state["methods"])
    options = [*PRESET_METHODS, *(label for label in chosen if label not in PRESET_METHODS)]
    bar.multiselect(
        f"Methods to compare (up to {MAX_METHODS})",
        options,
        key="methods",
        format_func=describe,
        max_selections=MAX_METHODS,
    )
    _builder()
    return problems


def _builder() -> None:
    """Widgets that compose a custom architecture x collective x schedule x compression."""
    with st.sidebar.expander("Add a custom method"):
        st.selectbox(
            "Architecture", list(ARCHITECTURES), key="b_arch", format_func=ARCHITECTURES.get
        )
        if st.session_state["b_arch"] == "allreduce":
            st.selectbox("Collective", list(ALLREDUCE_ALGORITHMS), key="b_coll")
        else:
            st.selectbox("Placement", ["separate", "colocated"], key="b_place")
            st.number_input("Servers (0: one per node)", 0, 4096, 0, key="b_servers")
        st.selectbox("Schedule", list(SCHEDULE_NAMES), index=1, key="b_sched")
        st.selectbox(
            "Compression",
            list(COMPRESSIONS),
            key="b_comp",
            accept_new_options=True,
            help="or type a spec: topk:0.05, qsgd:4, powersgd:8, randomk:0.01, ...",
        )
        st.button("Add method", on_click=_add_method, key="b_add")
        if st.session_state.get("b_msg"):
            st.caption(st.session_state["b_msg"])


def _add_method() -> None:
    state = st.session_state
    try:
        if state["b_arch"] == "allreduce":
            method = Method(
                schedule=state["b_sched"],
                collective=state["b_coll"],
                compression=str(state["b_comp"]).strip(),
            )
        else:
            method = Method(
                architecture="ps",
                schedule=state["b_sched"],
                ps_placement=state["b_place"],
                ps_servers=int(state["b_servers"]) or None,
                compression=str(state["b_comp"]).strip(),
            )
        label = method.label
        parse_method(label)
    except ValueError as exc:
        state["b_msg"] = f"Not added: {exc}"
        return
    if label in state["methods"]:
        state["b_msg"] = f"{label} is already selected."
    elif len(state["methods"]) >= MAX_METHODS:
        state["b_msg"] = f"Not added: at most {MAX_METHODS} methods; remove one first."
    else:
        state["methods"] = [*state["methods"], label]
        state["b_msg"] = f"Added {label}."
