"""The LLM planner's sidebar: model, training batch, cluster, links and the search, all in the URL.

URL keys: ``model``, ``llm_size``, ``seq``, ``gbatch``, ``nodes``, ``gpus``, ``gpu``, ``intra*``,
``inter*`` (shared with the other pages: same meaning), ``mbs``, ``zero``, ``rc``, ``sp``,
``maxv``, ``top``.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app_pages.llm_compute import Search, cluster_key
from app_pages.llm_models import CUSTOM_SIZE, MODEL_CHOICES, model_shape
from app_pages.network_inputs import link_fields, link_widgets, resolve_link
from app_pages.query_inputs import Field, choice, comma_list, int_between, join_list, seed, text
from costmodels.hardware import GPUS
from costmodels.llm.shapes import TransformerShape

MICRO_BATCHES = [1, 2, 4, 8, 16]
ZERO_STAGES = [0, 1, 2, 3]
RECOMPUTE = ["none", "selective", "full"]
SEQUENCE_PARALLEL = {"both": (False, True), "on": (True,), "off": (False,)}
MAX_GPUS = 32_768  # group placement is computed rank by rank; beyond this a rerun takes seconds


def _one_of(options: list) -> Callable[[str], object]:
    def parse(raw: str) -> object:
        for option in options:
            if str(option) == raw.strip():
                return option
        raise ValueError(f"{raw[:20]!r} is not one of {', '.join(map(str, options))}")

    return parse


FIELDS = [
    Field("model", "Llama 2 7B", choice(MODEL_CHOICES)),
    Field("llm_size", "30B", text(40)),
    Field("seq", 4096, int_between(1, 1_048_576)),
    Field("gbatch", 256, int_between(1, 10_000_000)),
    Field("nodes", 2, int_between(1, 4096)),
    Field("gpus", 8, int_between(1, 64)),
    Field("gpu", "A100 80GB SXM", choice(list(GPUS))),
    *link_fields("intra", "NVLink 3 (A100)", "300 GB/s", "2 us"),
    *link_fields("inter", "InfiniBand HDR", "25 GB/s", "5 us"),
    Field("mbs", [1, 2, 4], comma_list(_one_of(MICRO_BATCHES), 5), join_list),
    Field("zero", [0, 1], comma_list(_one_of(ZERO_STAGES), 4), join_list),
    Field("rc", list(RECOMPUTE), comma_list(_one_of(RECOMPUTE), 3), join_list),
    Field("sp", "both", choice(list(SEQUENCE_PARALLEL))),
    Field("maxv", 4, int_between(1, 128)),
    Field("top", 15, int_between(1, 200)),
]


def sidebar() -> list[str]:
    """Draw the inputs; return the messages about URL values that were ignored."""
    problems = seed(FIELDS)
    bar = st.sidebar
    bar.header("Model")
    bar.selectbox("Model", MODEL_CHOICES, key="model")
    if st.session_state["model"] == CUSTOM_SIZE:
        bar.text_input("Model size", key="llm_size", help="parameters, e.g. 30B, 1.3e10, 1T")
    bar.number_input("Sequence length", 1, 1_048_576, step=512, key="seq")
    bar.number_input("Global batch (sequences)", 1, 10_000_000, step=64, key="gbatch")
    bar.header("Cluster")
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes")
    bar.number_input("GPUs per node", min_value=1, max_value=64, step=1, key="gpus")
    bar.selectbox("GPU", list(GPUS), key="gpu", help="peak bf16 FLOP/s and memory per GPU")
    link_widgets("Intra-node link", "intra")
    link_widgets("Inter-node link", "inter")
    bar.header("Search")
    bar.multiselect("Micro-batch sizes", MICRO_BATCHES, key="mbs")
    bar.multiselect("ZeRO stages (over DP)", ZERO_STAGES, key="zero")
    bar.multiselect("Activation recomputation", RECOMPUTE, key="rc")
    bar.selectbox("Sequence parallelism (with TP)", list(SEQUENCE_PARALLEL), key="sp")
    bar.number_input("Largest interleave v", 1, 128, step=1, key="maxv")
    bar.number_input("Layouts in the table", 1, 200, step=5, key="top")
    return problems


def shape_from_inputs() -> TransformerShape:
    state = st.session_state
    return model_shape(state["model"], state["llm_size"], int(state["seq"]))


def gpu_count() -> int:
    """Nodes x GPUs per node; ValueError above MAX_GPUS."""
    total = int(st.session_state["nodes"]) * int(st.session_state["gpus"])
    if total > MAX_GPUS:
        raise ValueError(f"Cluster: {total:,} GPUs is more than this page plans ({MAX_GPUS:,})")
    return total


def cluster_from_inputs() -> tuple[tuple, list[str]]:
    """The cluster as a cache key and one line per link saying where its numbers come from."""
    state = st.session_state
    intra = resolve_link("Intra-node link", "intra", "intra")
    inter = resolve_link("Inter-node link", "inter", "inter")
    key = cluster_key(
        GPUS[state["gpu"]], int(state["gpus"]), intra.bandwidth_Bps, inter.bandwidth_Bps,
        intra.latency_s, inter.latency_s,
    )  # fmt: skip
    return key, [intra.description, inter.description]


def search_from_inputs() -> Search:
    state = st.session_state
    return Search(
        micro_batches=tuple(sorted(state["mbs"])),
        zero_stages=tuple(sorted(state["zero"])),
        recompute=tuple(r for r in RECOMPUTE if r in state["rc"]),
        sequence_parallel=SEQUENCE_PARALLEL[state["sp"]],
        max_interleave=int(state["maxv"]),
    )
