"""The LLM planner's sidebar: model, training batch, cluster, links, step options, calibration and
the search, all in the URL.

URL keys: ``model``, ``llm_size``, ``seq``, ``gbatch``, ``nodes``, ``gpus``, ``gpu``, ``intra*``,
``inter*`` (shared with the other pages: same meaning; ``intra`` also accepts "Follows the GPU",
the default), ``mtp`` (multi-token prediction depth, plan-llm's ``--mtp``), ``prec``, ``fw``,
``fp8r`` (float8 recipe), ``atp`` (async TP), ``moed`` (MoE dispatcher), ``cg`` (CUDA graphs),
``pcap`` (power cap in W, 0 = none), ``mstep``, ``mlayout``, ``mbs``, ``zero``, ``rc``, ``sp``,
``cp``, ``ep``, ``etp`` (expert TP degrees, 0 = the layout's TP), ``fsl`` / ``lsl`` (layers on
the first / last pipeline stage, 0 = the even split), ``maxv``, ``top``. Each is plan-llm's flag
of the same meaning (commatlas/llm_args.py, llm_recipe_args.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from app_pages.llm_compute import Search, cluster_key
from app_pages.llm_models import CUSTOM_SIZE, MODEL_CHOICES, menu_help, model_shape
from app_pages.network_inputs import (
    CUSTOM,
    GPU_LINK,
    cluster_field,
    cluster_widget,
    link_fields,
    link_widgets,
    resolve_link,
)
from app_pages.query_inputs import (
    Field,
    choice,
    comma_list,
    float_between,
    int_between,
    join_list,
    range_help,
    seed,
    text,
)
from costmodels.hardware import GPUS
from costmodels.hardware.defaults import LLM_INTER, LLM_INTER_LATENCY
from costmodels.limits import MAX_LAYERS
from costmodels.llm.fp8_recipes import FP8_RECIPES as RECIPE_CHOICES
from costmodels.llm.frameworks import FRAMEWORKS_ORDER
from costmodels.llm.moe_dispatch import DISPATCHERS
from costmodels.llm.planner import ALL_RECOMPUTE, DEFAULT_MICRO_BATCHES, DEFAULT_ZERO_STAGES
from costmodels.llm.precision import PRECISIONS as PRECISION_CHOICES
from costmodels.llm.shapes import MAX_MTP, TransformerShape

MICRO_BATCHES = [1, 2, 4, 8, 16]
ZERO_STAGES = [0, 1, 2, 3]
RECOMPUTE = ["none", "selective", "op", "full"]
FP8_RECIPES = ["default", *RECIPE_CHOICES]  # plan-llm's --fp8-recipe; default: the framework's
MOE_DISPATCHERS = ["default", *DISPATCHERS]  # plan-llm's --moe-dispatcher; default: left out
SEQUENCE_PARALLEL = {"both": (False, True), "on": (True,), "off": (False,)}
CONTEXT_PARALLEL = [1, 2, 4, 8, 16]
EXPERT_PARALLEL = [1, 2, 4, 8, 16, 32, 64]
EXPERT_TENSOR_PARALLEL = [0, 1, 2, 4, 8]  # plan-llm's --etp: 0 = the layout's TP
PRECISIONS = list(PRECISION_CHOICES)
FRAMEWORKS = list(FRAMEWORKS_ORDER)
MAX_GPUS = 32_768  # group placement is computed rank by rank; beyond this a rerun takes seconds
MAX_MEASURED_S = 1e6  # seconds: a step of more than 11 days is a typo
MEASURED_HELP = "e.g. tp=8,pp=1,dp=2,mb=1 (keys tp pp dp mb v zero recompute sp cp ep)"


def _one_of(options: list) -> Callable[[str], object]:
    def parse(raw: str) -> object:
        for option in options:
            if str(option) == raw.strip():
                return option
        raise ValueError(f"{raw[:20]!r} is not one of {', '.join(map(str, options))}")

    return parse


FIELDS = [
    cluster_field(),
    Field("model", "Llama 2 7B", choice(MODEL_CHOICES)),
    Field("llm_size", "30B", text(40)),
    Field("seq", 4096, int_between(1, 1_048_576)),
    Field("gbatch", 256, int_between(1, 10_000_000)),
    Field("nodes", 2, int_between(1, 4096)),
    Field("gpus", 8, int_between(1, 72)),
    Field("gpu", "A100 80GB SXM", choice(list(GPUS))),
    *link_fields("intra", GPU_LINK, "300 GB/s", "2 us", follow_gpu=True),
    *link_fields("inter", CUSTOM, LLM_INTER, LLM_INTER_LATENCY),  # predict-llm's default
    Field("prec", "bf16", choice(PRECISIONS)),
    Field("fw", "megatron", choice(FRAMEWORKS)),
    Field("fp8r", "default", choice(FP8_RECIPES)),
    Field("atp", 0, int_between(0, 1)),
    Field("moed", "default", choice(MOE_DISPATCHERS)),
    Field("cg", 0, int_between(0, 1)),
    Field("mtp", 0, int_between(0, MAX_MTP)),
    Field("pcap", 0.0, float_between(0.0, 5000.0)),
    Field("mstep", 0.0, float_between(0.0, MAX_MEASURED_S)),
    Field("mlayout", "tp=8,pp=1,dp=2,mb=1", text(200)),
    # the search plan-llm runs without --micro-batches / --zero-stages (costmodels.llm.planner)
    Field("mbs", list(DEFAULT_MICRO_BATCHES), comma_list(_one_of(MICRO_BATCHES), 5), join_list),
    Field("zero", list(DEFAULT_ZERO_STAGES), comma_list(_one_of(ZERO_STAGES), 4), join_list),
    Field("rc", list(ALL_RECOMPUTE), comma_list(_one_of(RECOMPUTE), 4), join_list),
    Field("sp", "both", choice(list(SEQUENCE_PARALLEL))),
    Field("cp", [1], comma_list(_one_of(CONTEXT_PARALLEL), 5), join_list),
    Field("ep", [1], comma_list(_one_of(EXPERT_PARALLEL), 7), join_list),
    Field("etp", [0], comma_list(_one_of(EXPERT_TENSOR_PARALLEL), 5), join_list),
    Field("fsl", 0, int_between(0, MAX_LAYERS)),
    Field("lsl", 0, int_between(0, MAX_LAYERS)),
    Field("maxv", 4, int_between(1, 128)),
    Field("top", 15, int_between(1, 200)),
]


#: predict-llm's flags as this page's fields (issue 42, item 2: an error names the field); a
#: model's own sizes are no field here, so they are named as the model's
LABELS = {"--model": "Model", "--seq-len": "Sequence length",
          "--global-batch": "Global batch (sequences)", "--nodes": "Nodes",
          "--gpus-per-node": "GPUs per node", "--gpu": "GPU", "--intra": "Intra-node link",
          "--inter": "Inter-node link",
          "--precision": "Precision (GEMMs)", "--framework": "Framework (kernel fusion)",
          "--fp8-recipe": "FP8 recipe (with fp8)", "--power-cap": "GPU power cap (W), 0 = none",
          "--measured-step": "Measured step (s), 0 = none",
          "--measured-layout": "Measured on layout", "--async-tp": "Async TP (1 = on)",
          "--micro-batches": "Micro-batch sizes", "--micro-batch": "Micro-batch sizes",
          "--zero-stages": "ZeRO stages (over DP)", "--zero": "ZeRO stages (over DP)",
          "--recompute-modes": "Activation recomputation",
          "--recompute": "Activation recomputation", "--max-interleave": "Largest interleave v",
          "--sequence-parallel": "Sequence parallelism (with TP)",
          "--cp": "Context-parallel degrees", "--ep": "Expert-parallel degrees (MoE)",
          "--top": "Layouts in the table", "--mtp": "Multi-token prediction depth",
          "--moe-dispatcher": "MoE dispatcher", "--cuda-graphs": "CUDA graphs (1 = on)",
          "--etp": "Expert tensor-parallel degrees", "--first-stage-layers":
          "Layers on the first stage", "--last-stage-layers": "Layers on the last stage",
          "--layers": "the model's layers", "--heads": "the model's heads",
          "--kv-heads": "the model's key-value heads", "--ffn": "the model's FFN width",
          "--hidden": "the model's hidden size", "--experts": "the model's experts",
          "--vocab": "the model's vocabulary", "precision 'fp8'": "Precision (GEMMs) 'fp8'",
          "precision 'fp4'": "Precision (GEMMs) 'fp4'"}  # fmt: skip


def sidebar() -> list[str]:
    """Draw the inputs; return the messages about URL values that were ignored."""
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.header("Model")
    bar.selectbox("Model", MODEL_CHOICES, key="model",
                  help=menu_help(MODEL_CHOICES[:-1], "predict-llm"))
    if st.session_state["model"] == CUSTOM_SIZE:
        bar.text_input("Model size", key="llm_size", help="parameters, e.g. 30B, 1.3e10, 1T")
    bar.number_input("Sequence length", 1, 1_048_576, step=512, key="seq")
    bar.number_input("Global batch (sequences)", 1, 10_000_000, step=64, key="gbatch")
    bar.number_input("Multi-token prediction depth", 0, MAX_MTP, step=1, key="mtp",
                     help="MTP modules on the last stage (plan-llm --mtp)")  # fmt: skip
    bar.header("Cluster")
    cluster_widget(("gpu", "gpus", "inter", "inter_bw", "inter_lat"), per_gpu_inter=True)
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes",
                     help=range_help(1, 4096))  # fmt: skip
    bar.number_input("GPUs per node", min_value=1, max_value=72, step=1, key="gpus",
                     help=range_help(1, 72, "GPUs sharing one intra-node fabric"))  # fmt: skip
    bar.selectbox("GPU", list(GPUS), key="gpu", help="peak FLOP/s, memory and NVLink per GPU")
    link_widgets("Intra-node link", "intra", "per GPU and direction, e.g. 300 GB/s",
                 follow_gpu=True)  # fmt: skip
    link_widgets("Inter-node link", "inter")
    bar.header("Step")
    bar.selectbox("Precision (GEMMs)", PRECISIONS, key="prec")
    bar.selectbox("Framework (kernel fusion)", FRAMEWORKS, key="fw")
    bar.selectbox(
        "FP8 recipe (with fp8)",
        FP8_RECIPES,
        key="fp8r",
        help="default: delayed for Megatron, tensorwise for PyTorch",
    )
    bar.number_input(
        "Async TP (1 = on)",
        0,
        1,
        step=1,
        key="atp",
        help="overlap TP collectives with their GEMMs (torchtitan)",
    )
    bar.selectbox("MoE dispatcher", MOE_DISPATCHERS, key="moed",
                  help="expert exchange (plan-llm --moe-dispatcher); default: alltoall, or "
                  "DeepSeek's node-limited form for such a model")  # fmt: skip
    bar.number_input("CUDA graphs (1 = on)", 0, 1, step=1, key="cg",
                     help="kernels replayed from a graph (--cuda-graphs)")  # fmt: skip
    bar.number_input("GPU power cap (W), 0 = none", 0.0, 5000.0, step=50.0, key="pcap")
    bar.number_input("Measured step (s), 0 = none", 0.0, MAX_MEASURED_S, key="mstep",
                     format="%.4g", help="calibrate on one measured step")  # fmt: skip
    if st.session_state["mstep"] > 0:
        bar.text_input("Measured on layout", key="mlayout", help=MEASURED_HELP)
    bar.header("Search")
    bar.multiselect("Micro-batch sizes", MICRO_BATCHES, key="mbs")
    bar.multiselect("ZeRO stages (over DP)", ZERO_STAGES, key="zero")
    bar.multiselect("Activation recomputation", RECOMPUTE, key="rc")
    bar.selectbox("Sequence parallelism (with TP)", list(SEQUENCE_PARALLEL), key="sp")
    bar.multiselect("Context-parallel degrees", CONTEXT_PARALLEL, key="cp")
    bar.multiselect("Expert-parallel degrees (MoE)", EXPERT_PARALLEL, key="ep")
    bar.multiselect("Expert tensor-parallel degrees", EXPERT_TENSOR_PARALLEL, key="etp",
                    help="the experts' TP (plan-llm --etp); 0 = the layout's TP")  # fmt: skip
    bar.number_input("Layers on the first stage", 0, MAX_LAYERS, step=1, key="fsl",
                     help="PP > 1 (--first-stage-layers); 0 = even split")  # fmt: skip
    bar.number_input("Layers on the last stage", 0, MAX_LAYERS, step=1, key="lsl",
                     help="PP > 1 (--last-stage-layers); 0 = even split")  # fmt: skip
    bar.number_input("Largest interleave v", 1, 128, step=1, key="maxv")
    bar.number_input("Layouts in the table", 1, 200, step=5, key="top")
    return problems


def shape_from_inputs() -> TransformerShape:
    """The model with plan-llm's --mtp applied (a hybrid model refuses it: TransformerShape's
    one-line message, the CLI's)."""
    state = st.session_state
    shape = model_shape(state["model"], state["llm_size"], int(state["seq"]))
    return replace(shape, mtp=int(state["mtp"])) if state["mtp"] else shape


def gpu_count() -> int:
    """Nodes x GPUs per node; ValueError above MAX_GPUS."""
    total = int(st.session_state["nodes"]) * int(st.session_state["gpus"])
    if total > MAX_GPUS:
        raise ValueError(f"Cluster: {total:,} GPUs is more than this page plans ({MAX_GPUS:,})")
    return total


def cluster_from_inputs() -> tuple[tuple, list[str]]:
    """The cluster as a cache key and one line per link saying where its numbers come from."""
    state = st.session_state
    gpu = GPUS[state["gpu"]]
    intra = resolve_link("Intra-node link", "intra", "intra", gpu=state["gpu"])
    inter = resolve_link("Inter-node link", "inter", "inter")
    cap = float(state["pcap"]) or None
    if cap is not None:
        from costmodels.llm.power import clock_factor

        try:
            clock_factor(gpu.name, cap)
        except ValueError as exc:
            raise ValueError(f"GPU power cap: {exc}".replace("--power-cap", "the cap")) from None
    key = cluster_key(gpu, int(state["gpus"]), intra.bandwidth_Bps, inter.bandwidth_Bps,
                      intra.latency_s, inter.latency_s, cap)  # fmt: skip
    return key, [intra.description, inter.description]


def check_precision() -> None:
    """ValueError when fp8 is chosen on a GPU without fp8 tensor cores (bf16 on a chip without
    bf16 runs at its fp16 peak, as in costmodels.llm.precision)."""
    state = st.session_state
    gpu = GPUS[state["gpu"]]
    if state["prec"] == "fp8" and gpu.fp8_tflops is None:
        raise ValueError(f"Precision (GEMMs): the {gpu.name} has no fp8 tensor cores; choose "
                         "bf16 or another GPU")  # fmt: skip
    if state["prec"] == "fp4" and gpu.fp4_tflops is None:  # issue 39: NVFP4, Blackwell only
        raise ValueError(f"Precision (GEMMs): the {gpu.name} has no FP4 tensor cores (NVFP4 "
                         "training needs Blackwell); choose fp8, bf16 or another GPU")  # fmt: skip


def search_from_inputs() -> Search:
    state = st.session_state
    return Search(
        micro_batches=tuple(sorted(state["mbs"])),
        zero_stages=tuple(sorted(state["zero"])),
        recompute=tuple(r for r in RECOMPUTE if r in state["rc"]),
        sequence_parallel=SEQUENCE_PARALLEL[state["sp"]],
        max_interleave=int(state["maxv"]),
        context_parallel=tuple(sorted(state["cp"])) or (1,),
        expert_parallel=tuple(sorted(state["ep"])) or (1,),
        stage_layers=(int(state["fsl"]), int(state["lsl"])),
        expert_tensor_parallel=tuple(sorted(state["etp"])) or (0,),
    )
