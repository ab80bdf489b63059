"""Page: compare data-parallel training methods for one workload on one cluster (the default page).

Inputs (sidebar, all in the URL): workload (named, a parameter count or a per-layer list), batch
size, GPU preset, the single-GPU step time (the H200 profile scaled to the GPU, or a measured
time: a visible choice, and the time used is shown under the field), nodes x GPUs per node,
intra- and inter-node links, NICs per node, up to 8 methods (architecture x collective x
schedule x compression; 7 by default, so "Add a custom method" has room). Shows a one-line
answer (the best method at the chosen GPU count and the runner-up), iteration time,
throughput and scaling efficiency against the number of GPUs, a table ranking the methods at
one GPU count with the breakdown into compute, exposed communication and compression, and the
timeline (Gantt) of backward and communication for one method. Colours mean the same in every
chart (app_pages/charts.PART_COLOURS).

The page draws its title and sidebar first; the results (app_pages/compare_results.py) import
pandas and the cost formulas only then, so the first paint does not wait for them (issue 30).
The numbers are those of ``commatlas predict`` (costmodels.dp.predict through
``app_pages.compare_methods.predict_fast``); each method's sweep is cached, so changing one input
reruns only what it affects.
"""

from __future__ import annotations

import streamlit as st

from app_pages.compare_compute import (
    WorkloadKey,
    custom_count_key,
    gpu_counts,
    layer_list_key,
    profiled_step_s,
)
from app_pages.compare_inputs import (
    CUSTOM_COUNT,
    CUSTOM_LAYERS,
    FIELDS,
    LABELS,
    OTHER_GPU,
    sidebar,
    uses_typed_step,
)
from app_pages.compare_methods import describe
from app_pages.field_names import field_error
from app_pages.network_inputs import resolve_link
from app_pages.query_inputs import show_problems, write_back
from costmodels.formatting import format_seconds
from costmodels.units import parse_time


def workload_key() -> WorkloadKey:
    """The workload as a hashable key; UnitParseError names the bad field."""
    name = st.session_state["workload"]
    if name == CUSTOM_COUNT:
        return custom_count_key(st.session_state["params"])
    if name == CUSTOM_LAYERS:
        return layer_list_key(st.session_state["layers"])
    return ("named", name)


def step_time(key: WorkloadKey) -> tuple[float, str]:
    """Single-GPU step seconds and where they come from (the sidebar's choice, module doc)."""
    state = st.session_state
    if not uses_typed_step():
        profiled = profiled_step_s(key, int(state["batch"]), state["gpu"])
        assert profiled is not None  # uses_typed_step() is False only with a profile
        return profiled, (f"the H200 profile of {state['workload']} scaled to batch "
                          f"{state['batch']} on the {state['gpu']}")  # fmt: skip
    seconds = parse_time(state["step"], "Measured step time")
    if state["gpu"] == OTHER_GPU or state["workload"] in (CUSTOM_COUNT, CUSTOM_LAYERS):
        why = "typed in the sidebar"
    elif state["stepsrc"] == "measured":
        why = "typed in the sidebar (chosen over the H200 profile)"
    else:
        why = f"typed in the sidebar: {state['workload']} has no H200 profile to scale"
    return seconds, why


def step_line() -> str:
    """The caption under the step field: the step time the page uses and its source."""
    try:
        seconds, source = step_time(workload_key())
    except ValueError:
        return "Step time used: none yet (see the message on the page)."
    return f"Step time used: **{format_seconds(seconds)}**, {source}."


def pick(key: str, options: list, fallback) -> None:
    """Keep a URL-bound selectbox value inside its current options (they depend on inputs)."""
    if st.session_state[key] not in options:
        st.session_state[key] = fallback


def follow_the_cluster(total: int) -> None:
    """When Nodes or GPUs per node change the cluster, the breakdown's GPU count that was the
    whole cluster becomes the new whole cluster (issue 42, item 3: Nodes 4 -> 8 changed the
    caption to 64 GPUs while the headline and table stayed at 32); a count the user chose
    below the whole cluster is kept."""
    state = st.session_state
    before = state.get("_cluster_total")
    if before is not None and before != total and int(state["at"]) == before:
        state["at"] = total
    state["_cluster_total"] = total


def main() -> None:
    st.title("Compare methods")
    problems = sidebar(step_line)
    state = st.session_state
    counts = gpu_counts(int(state["nodes"]), int(state["gpus"]))
    total = counts[-1]
    follow_the_cluster(total)
    pick("at", list(counts), total)
    st.sidebar.header("Details")
    st.sidebar.selectbox("GPU count for breakdown and timeline", list(counts), key="at")
    methods = list(state["methods"])
    pick("gantt", methods, methods[0] if methods else "")
    if methods:
        st.sidebar.selectbox("Method in the timeline", methods, key="gantt", format_func=describe)
    write_back(FIELDS)
    show_problems(problems)
    if not methods:
        st.warning("Choose at least one method in the sidebar.")
        return
    try:
        key = workload_key()
        step_s, step_source = step_time(key)
        intra = resolve_link("Intra-node link", "intra", "intra", gpu=state["gpu"])
        inter = resolve_link("Inter-node link", "inter", "inter")
    except ValueError as exc:
        field_error(exc, LABELS)
        return
    gpu = "" if state["gpu"] == OTHER_GPU else state["gpu"]
    nics = int(state["nics"])
    links = (intra.bandwidth_Bps, intra.latency_s, inter.bandwidth_Bps, inter.latency_s, nics, gpu)
    # Drawn so far: the title and the sidebar. What computes and draws the results (pandas,
    # the cost formulas, sympy) is imported now, not before the first paint (issue 30).
    from app_pages.compare_results import show_results

    show_results(key, step_s, step_source, intra, inter, links, counts)
    from app_pages.compare_paper_a import show_paper_a  # issue 43: the survey's own figure

    show_paper_a()


main()
