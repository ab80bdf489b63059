"""Page: serve a large model: time to first token, time per output token, throughput per GPU,
memory, and what disaggregating prefill and decode costs in KV-cache transfers.

Inputs (sidebar, all in the URL): a named model (the presets of ``commatlas predict-serving
--model``), a cluster preset (``sv_cluster``: it fills the GPU, the one input here that
``predict-serving --cluster`` also fills; the page keeps 8 GPUs per node and 25 GB/s per GPU
between nodes, and the KV-cache path is its own menu, as ``--transfer-link`` is not the
preset's), the GPU, TP x PP (x EP for MoE), precisions, the request (decode batch, prompt and
output tokens) and, for disaggregated serving, the prefill and decode instances and the path the
KV cache takes. Every number is costmodels.serving.predict_serving (the model behind
``commatlas predict-serving``); a batch sweep draws the latency-throughput curve.
"""

from __future__ import annotations

import streamlit as st

from app_pages.charts import draw
from app_pages.field_names import field_error
from app_pages.llm_models import menu_help, menu_order
from app_pages.network_inputs import cluster_field, cluster_widget
from app_pages.query_inputs import (
    Field,
    boolean,
    choice,
    int_between,
    range_help,
    seed,
    show_problems,
    write_back,
)
from app_pages.serving_compute import (
    breakdown_frame,
    breakdown_spec,
    cluster_of,
    curve_spec,
    engine_layout,
    pools_of,
    shape_of,
    sweep,
)
from app_pages.tables import show_table
from costmodels.formatting import format_bytes, format_number
from costmodels.hardware import GPUS, LINKS
from costmodels.serving import ServingLayout, predict_serving
from costmodels.serving.presets import SERVING_MODEL_NAMES

MODEL_NAMES = menu_order(SERVING_MODEL_NAMES)  # the CLI's presets, newest families first

PRECISIONS = ["bf16", "fp16", "fp8"]
WEIGHT_PRECISIONS = [*PRECISIONS, "fp4"]  # NVFP4 weights on Blackwell
TRANSFER_LINKS = ["nvlink", *LINKS]
MAX_TOKENS = 1_048_576
FIELDS = [
    Field("sv_model", "Llama 3.1 70B", choice(MODEL_NAMES)),
    cluster_field("sv_cluster"),
    Field("sv_gpu", "H100 SXM", choice(list(GPUS))),
    Field("sv_tp", 8, int_between(1, 8)),
    Field("sv_pp", 1, int_between(1, 64)),
    Field("sv_ep", 1, int_between(1, 1024)),
    Field("sv_prec", "bf16", choice(WEIGHT_PRECISIONS)),
    Field("sv_kv", "engine", choice(["engine", *PRECISIONS])),
    Field("sv_engine", "vllm", choice(["vllm", "sglang", "trtllm"])),
    Field("sv_batch", 16, int_between(1, 4096)),
    Field("sv_prompt", 1024, int_between(1, MAX_TOKENS)),
    Field("sv_output", 256, int_between(1, MAX_TOKENS)),
    Field("sv_disagg", False, boolean),
    Field("sv_pgpus", 1, int_between(1, 1024)),
    Field("sv_dgpus", 2, int_between(1, 1024)),
    Field("sv_link", "InfiniBand NDR", choice(TRANSFER_LINKS)),
    Field("sv_mode", "whole", choice(["whole", "layer-wise"])),
]
CLUSTER_HELP = (
    "fills the GPU from a cloud or vendor system (commatlas clusters), the only input of this "
    "page a preset sets: it keeps 8 GPUs per node and 25 GB/s per GPU between nodes, and the "
    "KV-cache path is chosen below; edit the GPU afterwards to override it"
)
#: the two throughputs of the page, said where each is shown (issue 42, item 5: the table's
#: 316 and the chart's ~1,100 tokens/s per GPU at batch 256 looked like one number twice)
THROUGHPUT_HELP = (
    "Two throughputs: the chart's x axis is decode-only tokens/s per GPU (the batch's tokens "
    "per decode step, batch / TPOT, prefills left out); the metric and the table's output "
    "tokens/s per GPU also pay for the prompts' prefills that share the GPUs (colocated) or "
    "for the prefill pool (disaggregated), so they are lower."
)
#: predict-serving's flags as this page's fields (issue 42, item 2: an error names the field)
LABELS = {"--model": "Model", "--gpu": "GPU", "--tp": "Tensor parallel (TP)",
          "--pp": "Pipeline stages (PP)", "--ep": "Expert parallel (EP)",
          "--precision": "Weights", "--kv-precision": "KV cache", "--engine": "Engine",
          "--batch": "Decode batch (sequences)", "--prompt-len": "Prompt tokens",
          "--output-len": "Output tokens", "--prefill-gpus": "Prefill instances",
          "--decode-gpus": "Decode instances", "--transfer-link": "KV-cache path (per GPU)",
          "--transfer-mode": "Transfer", "precision 'fp8'": "Weights 'fp8'",
          "precision 'fp4'": "Weights 'fp4'"}  # fmt: skip
TABLE = {"batch": "decode batch", "tpot_ms": "time per output token (ms)",
         "tokens_per_s_per_gpu": "output tokens/s per GPU, prefills included",
         "memory_GiB": "memory per GPU (GiB)",
         "fits": "fits"}  # fmt: skip
MORE = {"ttft_ms": "time to first token (ms)",
        "decode_tokens_per_s_per_gpu": "decode-only tokens/s per GPU (the chart's)",
        "ratio": "prefill:decode GPUs that balance"}  # fmt: skip


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.selectbox("Model", MODEL_NAMES, key="sv_model",
                  help=menu_help(MODEL_NAMES, "predict-serving"))
    cluster_widget({"gpu": "sv_gpu"}, menu="sv_cluster", help=CLUSTER_HELP)
    bar.selectbox("GPU", list(GPUS), key="sv_gpu")
    bar.number_input("Tensor parallel (TP)", 1, 8, step=1, key="sv_tp",
                     help=range_help(1, 8, "inside one node of 8 GPUs"))  # fmt: skip
    bar.number_input("Pipeline stages (PP)", 1, 64, step=1, key="sv_pp")
    bar.number_input(
        "Expert parallel (EP)",
        1,
        1024,
        step=1,
        key="sv_ep",
        help="MoE only; a multiple of TP: EP/TP attention groups share the experts",
    )
    bar.selectbox("Weights", WEIGHT_PRECISIONS, key="sv_prec")
    bar.selectbox("Engine", ["vllm", "sglang", "trtllm"], key="sv_engine",
                  help="its defaults price the first token and each token (predict-serving "
                  "--engine)")  # fmt: skip
    bar.selectbox("KV cache", ["engine", *PRECISIONS], key="sv_kv",
                  help="engine: the engine's rule (fp8 for fp8/fp4 checkpoints on trtllm, "
                  "else 16-bit)")  # fmt: skip
    bar.number_input("Decode batch (sequences)", 1, 4096, step=1, key="sv_batch")
    bar.number_input("Prompt tokens", 1, MAX_TOKENS, step=1, key="sv_prompt")
    bar.number_input("Output tokens", 1, MAX_TOKENS, step=1, key="sv_output")
    bar.checkbox("Disaggregated prefill and decode", key="sv_disagg")
    if st.session_state["sv_disagg"]:
        bar.number_input("Prefill instances", 1, 1024, step=1, key="sv_pgpus")
        bar.number_input("Decode instances", 1, 1024, step=1, key="sv_dgpus")
        bar.selectbox("KV-cache path (per GPU)", TRANSFER_LINKS, key="sv_link")
        bar.selectbox("Transfer", ["whole", "layer-wise"], key="sv_mode",
                      help="after the prefill, or layer by layer while it runs")  # fmt: skip
    write_back(FIELDS)
    return problems


def main() -> None:
    st.title("Serving")
    show_problems(sidebar())
    s = st.session_state
    prompt, output = int(s["sv_prompt"]), int(s["sv_output"])
    try:
        shape = shape_of(s["sv_model"], prompt, output)
        layout, engine = engine_layout(s, shape, prompt, output)
        cluster = cluster_of(s["sv_gpu"])
        pools = pools_of(s, layout, s["sv_gpu"])
        p = predict_serving(shape, layout, cluster, batch=int(s["sv_batch"]), prompt_len=prompt,
                            output_len=output, pools=pools, engine=engine)  # fmt: skip
        frame = sweep(shape, layout, cluster, prompt, output, pools, engine)
    except ValueError as exc:
        field_error(exc, LABELS)
        return
    _caption(s, layout, cluster)
    cols = st.columns(4)
    cols[0].metric("Time to first token", f"{format_number(p.ttft_s * 1e3)} ms")
    cols[1].metric("Time per output token", f"{format_number(p.tpot_s * 1e3)} ms")
    cols[2].metric("Output tokens/s per GPU", format_number(p.tokens_per_s_per_gpu),
                   help=THROUGHPUT_HELP)  # fmt: skip
    cols[3].metric("Memory per GPU", f"{format_number(p.memory_per_gpu_bytes / 2**30)} GiB")
    _answer(p, layout)
    draw(curve_spec(frame))
    st.caption(THROUGHPUT_HELP)
    show_table(frame, TABLE, more=MORE, more_label="TTFT, decode-only throughput, pool ratio")
    st.subheader("One decode step")
    draw(breakdown_spec(breakdown_frame(p)))
    if p.pools:
        _pools(p)


def _caption(s, layout: ServingLayout, cluster) -> None:  # noqa: ANN001 - session state
    st.caption(
        f"{s['sv_model']} on {layout.gpus} x {cluster.gpu.name} per instance (TP {layout.tp}, "
        f"PP {layout.pp}, EP {layout.ep}); {s['sv_prec']} weights, {layout.kv_precision} KV "
        f"cache, {s['sv_engine']}'s defaults, CUDA graphs. Inside a node: "
        f"{format_number(cluster.intra_bandwidth_Bps / 1e9)} GB/s per GPU (the GPU's own "
        "fabric, as NCCL counts it); between nodes 25 GB/s per GPU. "
        "Collectives priced with the NCCL model (algorithm and protocol per message); kernels "
        "with the training model's operator model; TTFT and TPOT are one engine iteration each "
        "as the request simulation prices it (the engine constants fitted on TensorRT-LLM "
        "runs). TPOT at the mean context (prompt + output/2); TTFT = one prompt's prefill in "
        "the engine's chunks, no queueing."
    )


def _answer(p, layout: ServingLayout) -> None:  # noqa: ANN001 - ServingPrediction
    memory = "memory-bandwidth-bound (weights and KV cache read per step)"
    compute = "compute-bound (the GEMMs wait on the tensor cores)"
    bound = memory if p.decode_gemm_memory_bound else compute
    ar = p.decode_tp_allreduce
    line = f"Decode is {bound}."
    if ar["algorithm"] != "none":
        share = ar["latency_s"] / ar["seconds"]
        line += (f" Each TP all-reduce moves {format_bytes(ar['bytes'])}: NCCL picks "
                 f"{ar['algorithm']}/{ar['protocol'].upper()}, "
                 f"{format_number(ar['seconds'] * 1e6)} µs, {format_number(100 * share)} % "
                 f"of it latency, 2 per layer.")  # fmt: skip
    if p.tpot_with_prefill_stalls_s is not None:
        line += (f" Colocated, prompts arriving at this batch stretch a step to "
                 f"{format_number(p.tpot_with_prefill_stalls_s * 1e3)} ms.")  # fmt: skip
    st.info(line)


def _pools(p) -> None:  # noqa: ANN001 - ServingPrediction
    pools = p.pools
    st.subheader("Disaggregated pools")
    st.write(
        f"Each request's KV cache ({format_bytes(p.kv_cache_bytes_per_token)} per token) "
        f"takes {format_number(p.kv_transfer_s * 1e3)} ms to move over "
        f"{pools['transfer_link']} ({format_number(p.kv_transfer_exposed_s * 1e3)} ms added "
        f"to the first token, {pools['transfer_mode']}). The prefill pool sustains "
        f"{format_number(pools['prefill_requests_per_s'])} requests/s, the decode pool "
        f"{format_number(pools['decode_requests_per_s'])}: {pools['bottleneck']} bound. "
        f"Balanced pools need {format_number(pools['balanced_prefill_gpus_per_decode_gpu'])} "
        "prefill GPUs per decode GPU (no latency targets or queueing headroom)."
    )


main()
