"""The Compare page's sidebar: every input bound to the URL, plus the custom-method builder.

Kept apart from ``compare.py`` so the page reads as inputs -> numbers -> charts. The URL keys
are the field keys below (``workload``, ``params``, ``layers``, ``batch``, ``gpu``, ``stepsrc``,
``step``, ``nodes``, ``gpus``, ``intra*``, ``inter*``, ``nics``, ``methods``, ``at``, ``gantt``).

The single-GPU step time is a visible choice (issue 17): the H200 profile scaled to the GPU, or
the measured time typed in the sidebar. The field is disabled while the profile is used, and a
caption under it always says which step time the page uses and where it comes from.
"""

from __future__ import annotations

from collections.abc import Callable

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
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import (
    GPU_LINK,
    cluster_field,
    cluster_widget,
    link_fields,
    link_widgets,
)
from app_pages.query_inputs import (
    Field,
    choice,
    comma_list,
    int_between,
    join_list,
    range_help,
    seed,
    text,
)
from costmodels.dp.cluster import ALLREDUCE_CHOICES
from costmodels.dp.predict import SCHEDULE_NAMES, Method
from costmodels.hardware import GPUS
from costmodels.hardware.defaults import DP_NETWORK, achieved_text, latency_text
from costmodels.workloads import NAMED_WORKLOADS, get_workload


def profiled_workload(name: str) -> bool:
    """A named workload with a measured H200 profile (costmodels/data/h200_profile.json)."""
    return get_workload(name).profile("fp32") is not None


CUSTOM_COUNT = "Custom: parameter count"
CUSTOM_LAYERS = "Custom: per-layer list"
WORKLOADS = [*NAMED_WORKLOADS, CUSTOM_COUNT, CUSTOM_LAYERS]
OTHER_GPU = "Other GPU (links only)"
LEGACY_OTHER = "Measured step time"  # the pseudo-GPU's old name, still read from old URLs
GPU_CHOICES = [*GPUS, OTHER_GPU]
PROFILE, TYPED = "profile", "measured"
STEP_SOURCES = {PROFILE: "H200 profile, scaled to the GPU", TYPED: "measured step time (below)"}


def _gpu_choice(raw: str) -> str:
    return OTHER_GPU if raw == LEGACY_OTHER else choice(GPU_CHOICES)(raw)


#: compare's flags as this page's fields (issue 42, item 2: an error names the field)
LABELS = {"--workload": "Workload", "--batch-size": "Batch size per GPU", "--gpu": "GPU",
          "--step-time": "Measured step time", "--nodes": "Nodes", "--node-counts": "Nodes",
          "--gpus-per-node": "GPUs per node", "--nics-per-node": "NICs per node (0: one per GPU)",
          "--intra": "Intra-node link", "--intra-latency": "Intra-node link latency",
          "--inter": "Inter-node link", "--inter-latency": "Inter-node link latency",
          "--architecture": "Architecture", "--collective": "Collective",
          "--ps-placement": "Placement", "--ps-servers": "Servers (0: one per node)",
          "--schedule": "Schedule", "--compression": "Compression"}  # fmt: skip
FIELDS = [
    cluster_field(),
    Field("workload", "ResNet-50", choice(WORKLOADS)),
    Field("params", "25M", text(40)),
    Field("layers", "2.4M, 9.4M, 37.7M, 102.8M", text(60_000)),
    Field("batch", 32, int_between(1, 1_000_000)),
    Field("gpu", "H200 SXM", _gpu_choice),
    Field("stepsrc", PROFILE, choice(list(STEP_SOURCES))),
    Field("step", "300 ms", text(40)),
    Field("nodes", 4, int_between(1, 4096)),
    Field("gpus", 8, int_between(1, 72)),
    *link_fields("intra", GPU_LINK, "100 GB/s", "2 us", follow_gpu=True),
    *link_fields("inter", DP_NETWORK, achieved_text(DP_NETWORK), latency_text(DP_NETWORK)),
    Field("nics", 0, int_between(0, 1024)),  # NICs per node; 0: one per GPU
    Field("methods", list(DEFAULT_METHODS), comma_list(valid_label, MAX_METHODS), join_list),
    Field("at", 0, int_between(0, 10**7)),  # 0: the full cluster
    Field("gantt", "", text(80)),  # "": the first method
]


CHIPS_WRAP = (
    "<style>[data-testid='stSidebar'] [data-tag]{max-width:100%;height:auto}"
    "[data-testid='stSidebar'] [data-tag] > span{white-space:normal;overflow:visible;"
    "text-overflow:clip;max-width:none}</style>"
)


def sidebar(step_line: Callable[[], str]) -> list[str]:
    """Draw the inputs; return the messages about URL values that were ignored.

    ``step_line()`` says which step time the page uses (shown under the step field); it is
    called after the workload and GPU widgets, so it sees their current values.
    """
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    cluster_widget(("gpu", "gpus", "nics", "inter", "inter_bw", "inter_lat"))
    bar.header("Workload")
    bar.selectbox("Workload", WORKLOADS, key="workload")
    if st.session_state["workload"] == CUSTOM_COUNT:
        bar.text_input("Parameters", key="params", help="e.g. 25M, 1.3B, 7e9")
    if st.session_state["workload"] == CUSTOM_LAYERS:
        bar.text_area(
            "Parameters per layer", key="layers", help="forward order, comma separated: 4M, 1M"
        )
    bar.number_input("Batch size per GPU", min_value=1, max_value=1_000_000, key="batch",
                     help=range_help(1, 1_000_000, "samples per GPU per iteration"))  # fmt: skip
    bar.selectbox(
        "GPU", GPU_CHOICES, key="gpu",
        help="scales the measured H200 step (fp32 peak ratio) and picks the intra-node fabric "
        f"NCCL runs on (NVSwitch, NVLS, PCIe); '{OTHER_GPU}': a fabric given by the intra-node "
        "bandwidth alone and the measured step time",
    )  # fmt: skip
    if profile_available():
        bar.radio("Single-GPU step time", list(STEP_SOURCES), key="stepsrc",
                  format_func=STEP_SOURCES.get)  # fmt: skip
    bar.text_input(
        "Measured step time", key="step", disabled=not uses_typed_step(),
        help="single-GPU forward + backward + update at this batch size, e.g. 250 ms; used when "
        "'measured step time' is chosen, or when the workload has no H200 profile",
    )  # fmt: skip
    bar.caption(step_line())
    bar.header("Cluster")
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes",
                     help=range_help(1, 4096, "whole nodes of the GPUs per node"))  # fmt: skip
    bar.number_input("GPUs per node", min_value=1, max_value=72, step=1, key="gpus",
                     help=range_help(1, 72, "GPUs sharing one intra-node fabric"))  # fmt: skip
    link_widgets("Intra-node link", "intra", "per GPU and direction, e.g. 300 GB/s",
                 follow_gpu=True)  # fmt: skip
    link_widgets("Inter-node link", "inter", "per NIC and direction, e.g. 400 Gbit/s")
    bar.number_input(
        "NICs per node (0: one per GPU)", min_value=0, max_value=1024, step=1, key="nics",
        help="network adapters (rails) per node, each of the inter-node link's speed; NCCL runs "
        "a ring or tree channel on every one. " + range_help(0, 1024, "0 means one per GPU"),
    )  # fmt: skip
    bar.header("Methods")
    # Method names are long ("MG-WFBP · nccl all-reduce + topk:0.01"): let the chips wrap
    # instead of cutting them to "MG-WFBP · nccl all-r..." (issue 30).
    bar.markdown(CHIPS_WRAP, unsafe_allow_html=True)
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


def profile_available() -> bool:
    """Whether the H200 profile can give the step time: a named workload that has one, on a
    GPU preset (custom workloads and the links-only GPU have none)."""
    state = st.session_state
    if state["gpu"] == OTHER_GPU or state["workload"] in (CUSTOM_COUNT, CUSTOM_LAYERS):
        return False
    return profiled_workload(state["workload"])


def uses_typed_step() -> bool:
    """Whether the page uses the typed step time (the field is enabled exactly then)."""
    return not profile_available() or st.session_state["stepsrc"] == TYPED


def _builder() -> None:
    """Widgets that compose a custom architecture x collective x schedule x compression."""
    with st.sidebar.expander("Add a custom method"):
        st.selectbox(
            "Architecture", list(ARCHITECTURES), key="b_arch", format_func=ARCHITECTURES.get
        )
        if st.session_state["b_arch"] == "allreduce":
            st.selectbox(
                "Collective", list(ALLREDUCE_CHOICES), key="b_coll",
                help="nccl: NCCL's own choice per message; nccl-ring, nccl-tree ...: that NCCL "
                "algorithm; the rest: textbook algorithms on the per-GPU links",
            )  # fmt: skip
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
            st.caption(escape_markdown(st.session_state["b_msg"]))


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
