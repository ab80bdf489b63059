"""Page: how often to checkpoint and how much of a training job's time survives its failures.

Inputs (sidebar, all in the URL, keys ``gp_*``): the model (a preset of predict-llm or a size), a
cluster preset (``gp_cluster``: fills the GPU, GPUs per node and the peer bandwidth per node, the
preset's NICs x their achieved rate, as ``predict-goodput --cluster`` does; editing a field
afterwards overrides it), GPU, GPUs per node, TP x PP x DP and the ZeRO stage; how checkpoints are
written (synchronous, asynchronous, in-memory), the interval rule or a fixed interval, storage
bandwidths; the failure rate (per GPU, or a measured job MTBF) and the restart time. Empty inputs
take the sourced defaults of costmodels.goodput.sources. Shows the expected goodput per mode,
Young's split of the waste, goodput against the interval, and a what-if table over GPU counts x
storage bandwidths.
"""

from __future__ import annotations

import streamlit as st

from app_pages.charts import draw
from app_pages.field_names import field_error, name_fields
from app_pages.goodput_compute import (
    curve_frame,
    goodput_chart,
    layout_of,
    make_case,
    mode_frame,
    predictions,
    what_if_frame,
)
from app_pages.llm_models import CUSTOM_SIZE, MODEL_CHOICES, menu_help, model_shape
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import cluster_field, cluster_widget
from app_pages.query_inputs import (
    Field,
    boolean,
    choice,
    int_between,
    seed,
    show_problems,
    text,
    write_back,
)
from app_pages.tables import show_table
from costmodels.formatting import counted, format_bytes, format_percent
from costmodels.goodput import MODES
from costmodels.goodput import sources as s
from costmodels.hardware import GPUS
from costmodels.limits import MAX_LIST_ITEMS
from costmodels.units import parse_bandwidth, parse_time

RULES = ["daly", "young", "exact"]
RULE_NAMES = {"daly": "Daly's (2006)", "young": "Young's (1974)", "exact": "the exact optimum"}
SEQ = 4096  # tokens: sizes only GPT-style position embeddings, a rounding error here
FIELDS = [
    Field("gp_model", "Llama 3.1 405B", choice(MODEL_CHOICES)),
    Field("gp_size", "30B", text(40)),
    cluster_field("gp_cluster"),
    Field("gp_gpu", "H100 SXM", choice(list(GPUS))),
    Field("gp_gpn", 8, int_between(1, 72)),
    Field("gp_tp", 8, int_between(1, 64)),
    Field("gp_pp", 9, int_between(1, 1024)),
    Field("gp_dp", 224, int_between(1, 131_072)),
    Field("gp_zero", "1", choice(["0", "1", "2", "3"])),
    Field("gp_mode", "sync", choice(list(MODES))),
    Field("gp_rule", "daly", choice(RULES)),
    Field("gp_interval", "", text(40)),
    Field("gp_storage", "2 TB/s", text(40)),
    Field("gp_node_bw", "50 GB/s", text(40)),
    Field("gp_host_bw", "", text(40)),
    Field("gp_peer_bw", "", text(40)),
    Field("gp_gpu_mtbf", "", text(40)),
    Field("gp_job_mtbf", "", text(40)),
    Field("gp_restart", "10 min", text(40)),
    Field("gp_balanced", False, boolean),
    Field("gp_wi_gpus", "1008, 4032, 16128", text(200)),
    Field("gp_wi_storage", "200 GB/s, 2 TB/s", text(200)),
]
#: what the cluster preset fills (preset_values key -> this page's), as predict-goodput --cluster
CLUSTER_KEYS = {"gpu": "gp_gpu", "gpus": "gp_gpn", "node_inter_bw": "gp_peer_bw"}
CLUSTER_HELP = (
    "fills the GPU, GPUs per node and the peer bandwidth per node (the preset's NICs x their "
    "achieved rate, as predict-goodput --cluster) from a cloud or vendor system (commatlas "
    "clusters); edit any field afterwards to override it"
)
TABLE = {"mode": "mode", "goodput_pct": "goodput (%)", "blocking_s": "training waits (s)",
         "persist_s": "then in the background (s)", "interval_min": "interval (min)",
         "restart_min": "restart (min)"}  # fmt: skip
MORE = {"optimal_min": "optimal interval (min)", "load_s": "read back (s)",
        "checkpointing_pct": "lost to checkpoints (%)", "rework_pct": "lost to rework (%)",
        "restart_pct": "lost to restarts (%)", "blocks": "what blocks"}  # fmt: skip


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.header("Model and layout")
    bar.selectbox("Model", MODEL_CHOICES, key="gp_model",
                 help=menu_help(MODEL_CHOICES[:-1], "predict-llm"))
    if st.session_state["gp_model"] == CUSTOM_SIZE:
        bar.text_input("Model size", key="gp_size", help="parameters, e.g. 30B")
    cluster_widget(CLUSTER_KEYS, menu="gp_cluster", help=CLUSTER_HELP)
    bar.selectbox("GPU", list(GPUS), key="gp_gpu", help="sets the GPU-to-host (PCIe) link")
    bar.number_input("GPUs per node", 1, 72, step=1, key="gp_gpn")
    bar.number_input("TP", 1, 64, step=1, key="gp_tp", help="tensor-parallel degree")
    bar.number_input("PP", 1, 1024, step=1, key="gp_pp", help="pipeline stages")
    bar.number_input("DP", 1, 131_072, step=1, key="gp_dp", help="data-parallel degree")
    bar.selectbox("ZeRO stage", ["0", "1", "2", "3"], key="gp_zero")
    bar.header("Checkpoints")
    bar.selectbox("Write mode", list(MODES), key="gp_mode",
                  help="sync: training waits for storage; async: only for the copy to host "
                  "memory (CheckFreq); in-memory: a peer keeps the copy (GEMINI)")  # fmt: skip
    bar.selectbox("Interval rule", RULES, key="gp_rule", help="Daly 2006, Young 1974, exact")
    bar.text_input("Fixed interval", key="gp_interval", help="e.g. 1 h; empty: the optimum",
                   placeholder="empty: the optimal interval")  # fmt: skip
    bar.text_input(
        "Storage bandwidth",
        key="gp_storage",
        help="aggregate write bandwidth; 2 TB/s: Llama 3's storage, sustained",
    )
    bar.text_input(
        "Storage bandwidth per node",
        key="gp_node_bw",
        help="50 GB/s: two 200 Gbit/s front-end NICs (an estimate)",
    )
    bar.text_input("GPU-to-host bandwidth", key="gp_host_bw", help="empty: the GPU's PCIe link",
                   placeholder="empty: the GPU's PCIe link")  # fmt: skip
    bar.text_input(
        "Peer bandwidth per node",
        key="gp_peer_bw",
        help="in-memory mode; empty: 25 GB/s per GPU (one 200 Gbit/s NIC each)",
        placeholder="empty: 25 GB/s per GPU",
    )
    bar.checkbox("Spread replicated tensors over replicas", key="gp_balanced")
    bar.header("Failures")
    bar.text_input("MTBF of one GPU", key="gp_gpu_mtbf",
                   help="e.g. 2000 days; empty: from Llama 3's 419 unexpected interruptions in "
                   "54 days on 16,384 GPUs",
                   placeholder="empty: Llama 3's failure rate")  # fmt: skip
    bar.text_input("Measured MTBF of the job", key="gp_job_mtbf", help="e.g. 3 h; overrides",
                   placeholder="e.g. 3 h (optional)")  # fmt: skip
    bar.text_input(
        "Restart time",
        key="gp_restart",
        help="before the checkpoint is read; 10 min: Daly 2006's examples",
    )
    bar.header("What if")
    bar.text_input("GPU counts", key="gp_wi_gpus", help="comma-separated, multiples of TP x PP")
    bar.text_input("Storage bandwidths", key="gp_wi_storage", help="comma-separated")
    write_back(FIELDS)
    return problems


def _time(key: str, label: str) -> float | None:
    raw = st.session_state[key].strip()
    return parse_time(raw, label) if raw else None


def _bandwidth(key: str, label: str) -> float | None:
    raw = st.session_state[key].strip()
    return parse_bandwidth(raw, label) if raw else None


def _list(key: str, label: str, parse) -> list:
    parts = [part.strip() for part in st.session_state[key].split(",") if part.strip()]
    if not 1 <= len(parts) <= MAX_LIST_ITEMS:
        raise ValueError(f"{label}: give 1 to {MAX_LIST_ITEMS} values, comma-separated")
    return [parse(part) for part in parts]


def _count(text_value: str) -> int:
    if not text_value.isdigit() or int(text_value) < 1:
        raise ValueError(f"{LABELS['--what-if-gpus']}: {text_value[:20]!r} is not a whole number "
                         ">= 1")  # fmt: skip
    return int(text_value)


def resolve():
    state = st.session_state
    shape = model_shape(state["gp_model"], state["gp_size"], SEQ)
    layout = layout_of(shape, int(state["gp_tp"]), int(state["gp_pp"]), int(state["gp_dp"]),
                       int(state["gp_zero"]), int(state["gp_gpn"]))  # fmt: skip
    for key, label in (("gp_interval", "Fixed interval"), ("gp_gpu_mtbf", "MTBF of one GPU"),
                       ("gp_job_mtbf", "Measured MTBF of the job")):  # fmt: skip
        if _time(key, label) == 0:
            raise ValueError(f"{label}: must be more than 0 s")
    case = make_case(
        shape, layout, gpus_per_node=int(state["gp_gpn"]), gpu_name=state["gp_gpu"],
        storage_Bps=parse_bandwidth(state["gp_storage"], "Storage bandwidth"),
        node_storage_Bps=parse_bandwidth(state["gp_node_bw"], "Storage bandwidth per node"),
        host_Bps=_bandwidth("gp_host_bw", "GPU-to-host bandwidth"),
        peer_Bps=_bandwidth("gp_peer_bw", "Peer bandwidth per node"),
        gpu_mtbf_s=_time("gp_gpu_mtbf", "MTBF of one GPU"),
        job_mtbf_s=_time("gp_job_mtbf", "Measured MTBF of the job"),
        restart_s=parse_time(state["gp_restart"], "Restart time"), rule=state["gp_rule"],
        interval_s=_time("gp_interval", "Fixed interval"), balanced=bool(state["gp_balanced"]),
    )  # fmt: skip
    gpus = _list("gp_wi_gpus", LABELS["--what-if-gpus"], _count)
    storage_label = LABELS["--what-if-storage"]
    storage = _list("gp_wi_storage", storage_label,
                    lambda t: parse_bandwidth(t, storage_label))  # fmt: skip
    return shape, case, gpus, storage


#: predict-goodput's flags as this page's fields (issue 42, item 2: an error names the field)
LABELS = {"--model": "Model", "--gpu": "GPU", "--gpus-per-node": "GPUs per node", "--tp": "TP",
          "--pp": "PP", "--dp": "DP", "--zero": "ZeRO stage", "--mode": "Write mode",
          "--interval-rule": "Interval rule", "--interval": "Fixed interval",
          "--host-bandwidth": "GPU-to-host bandwidth", "--job-mtbf": "Measured MTBF of the job",
          "--restart": "Restart time", "--what-if-storage": "What if → Storage bandwidths",
          "--storage-bandwidth": "Storage bandwidth",
          "--node-storage-bandwidth": "Storage bandwidth per node",
          "--peer-bandwidth": "Peer bandwidth per node", "--gpu-mtbf": "MTBF of one GPU",
          "--balanced-save": "Spread replicated tensors over replicas",
          "--what-if-gpus": "What if → GPU counts", "--layers": "the model's layers",
          "--heads": "the model's heads", "--kv-heads": "the model's key-value heads",
          "--ffn": "the model's FFN width", "tp x pp x cp": "TP x PP x CP"}  # fmt: skip


def what_if_problem(why: str, layout, gpus: list[int]) -> str:
    """The what-if table's error naming the field that causes it (issue 42: "1008 GPUs is not a
    multiple of tp x pp x cp" replaced the page after a PP change, naming no field), with the
    nearest counts that work."""
    unit = layout.tp * layout.pp * layout.cp
    bad = next((g for g in gpus if g % unit), None)
    if bad is None:
        return f"What if → GPU counts (sidebar, last section): {why}"
    near = sorted({max(unit, bad // unit * unit), (bad // unit + 1) * unit})
    return (f"What if → GPU counts (sidebar, last section): {why}. With TP {layout.tp} x PP "
            f"{layout.pp}{f' x CP {layout.cp}' if layout.cp > 1 else ''} = {unit}, try "
            f"{' or '.join(f'{n:,}' for n in near)} instead of {bad:,}; the results above do not "
            "depend on it.")


def main() -> None:
    st.title("Goodput")
    problems = sidebar()
    show_problems(problems)
    try:
        shape, case, gpus, storage = resolve()
        results = predictions(case)
    except ValueError as exc:  # UnitParseError, LayoutError, a bad what-if GPU count ...
        field_error(exc, LABELS)
        return
    mode = st.session_state["gp_mode"]
    if mode not in results:
        st.error(f"Checkpoints → Fixed interval: {mode} checkpoints take longer to write in the "
                 "background than the interval; lengthen it, or leave it empty for the optimum")
        return
    chosen = results[mode]
    st.success(
        f"{mode} checkpoints every {chosen.interval_s / 60:.3g} min keep "
        f"{format_percent(chosen.expected_goodput)} of the time "
        f"(training waits {chosen.checkpoint_write_s:.3g} s per checkpoint)."
    )
    size = case.size
    failures = "measured" if case.job_mtbf_s else f"{case.gpu_mtbf_s / 86_400:,.0f} GPU-days each"
    st.caption(
        f"{counted(size.gpus, 'GPU')} ({counted(size.nodes, 'node')}); checkpoint "
        f"{format_bytes(size.total_bytes)} "
        f"for the job, {format_bytes(size.busiest_gpu_bytes)} from the busiest GPU (weights + "
        f"optimizer states, 14 bytes per parameter). Job MTBF {chosen.job_mtbf_s / 3600:.3g} h "
        f"({failures}); host link: {case.host_source}. Goodput: Daly's expected wall-clock "
        f"time for Poisson failures (Daly 2006); interval: {RULE_NAMES[case.rule]}. "
        f"Defaults: {s.LLAMA3_405B.source}; restart 10 min from Daly's "
        "examples (an estimate)."
    )
    show_table(mode_frame(results), TABLE, more=MORE, more_label="Where the time goes",
               key="mode")  # fmt: skip
    draw(goodput_chart(curve_frame(results), results))
    st.subheader("What if")
    try:
        wide = what_if_frame(shape, case, gpus, storage)
    except ValueError as exc:  # a GPU count the layout cannot scale to: say which field
        st.error(escape_markdown(what_if_problem(name_fields(exc, LABELS), case.layout, gpus)))
        return
    headers = {"gpus": "GPUs", "storage_GBps": "storage (GB/s)",
               **{m: f"{m} (%)" for m in MODES}}  # fmt: skip
    show_table(wide, headers)
    st.caption(
        "Goodput at each mode's optimal interval; more GPUs scale the data-parallel "
        "degree (failures grow with the GPU count, the checkpoint stays the same size)."
    )


main()
