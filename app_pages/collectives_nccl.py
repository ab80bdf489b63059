"""The Collectives page's NCCL view: one collective as NCCL would run it (costmodels.nccl).

Inputs (sidebar, in the URL): the GPU preset (which selects the intra-node fabric), the NIC
link and NICs per node, CollNet (SHARP network), a forced algorithm or protocol; shared with
the textbook view: the collective, nodes x GPUs per node, the size range and pasted measured
points. An uploaded nccl-tests log (capped at costmodels.limits.MAX_UPLOAD_BYTES) is overlaid,
and the session's calibrated profile (Calibrate page) can calibrate the model.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.charts import draw, size_chart
from app_pages.collectives_nccl_compute import (
    CHOICE,
    choice_table,
    measured_from_log,
    nccl_curves,
    switches,
)
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import active_profile, cluster_field, cluster_widget
from app_pages.query_inputs import Field, boolean, choice, int_between, text
from app_pages.tables import rows_height, styled
from costmodels.formatting import counted, format_seconds
from costmodels.hardware import GPUS, LINKS
from costmodels.hardware.defaults import NCCL_NIC, achieved_text
from costmodels.limits import MAX_UPLOAD_BYTES

CUSTOM_NIC = "Custom bandwidth per NIC"
TRANSPORTS = ("ib", "roce", "efa", "efa-sendrecv", "tcpx", "tcpxo", "socket")
ALGORITHMS = ("auto", "ring", "tree", "collnet-direct", "collnet-chain", "nvls", "nvls-tree",
              "pat", "p2p")  # fmt: skip
PROTOCOLS = ("auto", "ll", "ll128", "simple")
FIELDS = [
    cluster_field(),
    Field("gpu", "H100 SXM", choice(list(GPUS))),
    Field("nic", NCCL_NIC, choice([*LINKS, CUSTOM_NIC])),
    Field("nic_bw", achieved_text(NCCL_NIC), text(60)),  # custom starts at the preset's figure
    Field("nics", 8, int_between(1, 1024)),
    Field("collnet", False, boolean),
    Field("transport", "ib", choice(list(TRANSPORTS))),
    Field("algo", "auto", choice(ALGORITHMS)),
    Field("proto", "auto", choice(PROTOCOLS)),
    Field("calib", False, boolean),
]


def widgets() -> None:
    """The NCCL view's sidebar widgets (after the shared ones)."""
    bar = st.sidebar
    cluster_widget(("gpu", "gpus", "nics", "transport", "collnet", "nic", "nic_bw"))
    bar.selectbox("GPU (selects the intra-node fabric)", list(GPUS), key="gpu",
                  help="NVSwitch + NVLink (NVLS from H100 on), NVLink mesh (V100) or PCIe; "
                  "bandwidth per GPU as NCCL's topology counts it")  # fmt: skip
    bar.selectbox("NIC link (per NIC)", [*LINKS, CUSTOM_NIC], key="nic",
                  help="one NIC's link; a node has 'NICs per node' of them")  # fmt: skip
    if st.session_state["nic"] == CUSTOM_NIC:
        bar.text_input("Bandwidth per NIC", key="nic_bw",
                       help="as achieved, e.g. 45 GB/s (the InfiniBand NDR preset: 400 Gbit/s "
                       "nominal x 0.9 achievable)")  # fmt: skip
    bar.number_input("NICs per node", min_value=1, max_value=1024, step=1, key="nics",
                     help="rails; NCCL runs one ring/tree channel per NIC")  # fmt: skip
    bar.selectbox("Transport between nodes", TRANSPORTS, key="transport",
                  help="ib/roce GPUDirect RDMA, efa (aws-ofi-nccl), tcpx/tcpxo (Google), "
                  "socket (TCP): protocols, reported latency, efficiency")  # fmt: skip
    bar.checkbox("SHARP network (CollNet)", key="collnet")
    bar.selectbox("Algorithm", ALGORITHMS, key="algo", help="auto: NCCL's tuner rule")
    bar.selectbox("Protocol", PROTOCOLS, key="proto", help="auto: NCCL's tuner rule")
    if active_profile() is not None:
        bar.checkbox("Calibrate with the session's profile", key="calib")
    bar.file_uploader("Overlay an nccl-tests log (all_reduce_perf ... output)",
                      type=["txt", "log", "out"], key="nccl_log")  # fmt: skip


def build_system():
    """The NcclSystem of the widgets (ValueError with a message for the page)."""
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.units import parse_bandwidth

    state = st.session_state
    nodes, g = int(state["nodes"]), int(state["gpus"])
    nic = state["nic"]
    extra = {}
    if nodes > 1:
        if nic == CUSTOM_NIC:
            extra["nic_bandwidth_Bps"] = parse_bandwidth(state["nic_bw"], "Bandwidth per NIC")
        else:
            extra["inter"] = nic
    system = system_from_cluster(gpus_per_node=g, nodes=nodes, gpu=state["gpu"],
                                 nics_per_node=int(state["nics"]), collnet=bool(state["collnet"]),
                                 transport=state["transport"] if nodes > 1 else None,
                                 **extra)  # fmt: skip
    profile = active_profile()
    if profile is not None and state["calib"]:
        from costmodels.calibration.nccl_from_profile import system_from_profile

        system = system_from_profile(profile, system, state["coll"])
    return system


def _measured(collective: str, p: int, pasted):
    upload = st.session_state.get("nccl_log")
    if upload is None:
        return pasted, ""
    if upload.size > MAX_UPLOAD_BYTES:  # before reading or decoding anything
        raise ValueError(
            f"nccl-tests log: {upload.size:,} bytes, more than the {MAX_UPLOAD_BYTES:,} accepted"
        )
    return measured_from_log(upload.getvalue(), collective, p)


def view(collective: str, sizes: np.ndarray, pasted) -> None:
    """Draw the NCCL view; errors become one message."""
    state = st.session_state
    try:
        system = build_system()
        frame = nccl_curves(collective, system, sizes, state["algo"], state["proto"])
        measured, note = _measured(collective, system.p, pasted)
    except ValueError as exc:
        st.error(escape_markdown(" ".join(str(exc).split())))
        return
    st.caption(
        f"{collective} on {counted(system.p, 'GPU')} ({counted(system.nodes, 'node')} x "
        f"{counted(system.gpus_per_node, 'GPU')}), "
        f"as NCCL would run it. " + " ".join(f"{line}." for line in system.notes)
        + f" Launch {format_seconds(system.launch_s)} per call, added after NCCL's choice. The "
        "intra-node bandwidth is per GPU and direction, the network's per NIC and direction "
        "('NICs per node' of them). NCCL's tuner picks the algorithm and protocol per message "
        "on its own view (the NICs' port speed, the plugin's reported latency, no per-call "
        "costs) unless forced in the sidebar; the time is then that pair's on the network as "
        "it runs: the transport's efficiency and hop latency, its protocols (EFA on P4d and "
        "Google's TCPX/TCPXO run Simple only), and for EFA a share of the rate that falls with "
        "the node count. A cluster preset fills the GPU, NICs and transport of a cloud or "
        "vendor system (guide: which cloud network is my cluster?). Bus bandwidth follows "
        "nccl-tests."
    )  # fmt: skip
    chosen = frame[frame["algorithm"] == CHOICE]
    others = frame[frame["algorithm"] != CHOICE]
    marks = switches(frame)
    # Bus bandwidth: NCCL's curve, one colour per chosen (algorithm/protocol) stretch.
    segments = chosen.assign(algorithm="NCCL: " + chosen["choice"])
    draw(size_chart(segments, "busbw_GBps", "bus bandwidth (GB/s)", marks, measured))
    # Time: the choice and every candidate it was chosen from.
    draw(size_chart(frame, "time_us", "time (us)", marks, measured))
    st.subheader("Algorithm and protocol NCCL picks")
    choices = choice_table(frame)
    st.dataframe(
        styled(choices), hide_index=True, width="stretch", height=rows_height(len(choices))
    )
    if note or len(measured):
        st.caption(f"{len(measured)} measured points overlaid (diamonds). "
                   f"{escape_markdown(note)}")
    with st.expander("Every candidate (algorithm/protocol) at the range's ends"):
        ends = others[others["bytes"].isin([sizes[0], sizes[-1]])]
        st.dataframe(styled(ends[["algorithm", "bytes", "time_us", "busbw_GBps"]]),
                     hide_index=True, width="stretch")  # fmt: skip
    st.caption(f"{len(chosen)} sizes; lines: {CHOICE} and each candidate pair.")
