"""Page: which GPU, TP degree and precision serve a workload at the highest rate per GPU within
latency targets (TTFT p90, TPOT p99), ranked by output tokens/s per GPU or per dollar.

Inputs (sidebar, all in the URL): the model (serving presets: Llama, Llama 4, Qwen3,
DeepSeek-V3 with MLA ...), the GPUs, TP degrees and precisions to try, the request lengths, the
targets, optional prices ($ per GPU-hour) and a total rate to size replicas for. Every number is
costmodels.serving.plan.plan_serving (the model behind ``commatlas plan-serving``).
"""

from __future__ import annotations

import streamlit as st

from app_pages.charts import draw
from app_pages.field_names import field_error
from app_pages.llm_models import menu_help, menu_order
from app_pages.query_inputs import (
    Field,
    choice,
    comma_list,
    float_between,
    int_between,
    join_list,
    seed,
    show_problems,
    text,
    write_back,
)
from app_pages.serving_plan_compute import (
    COLUMNS,
    LABELS,
    MORE,
    bar_spec,
    display_frame,
    plan_frame,
)
from app_pages.tables import show_table
from costmodels.formatting import format_number
from costmodels.hardware import GPUS
from costmodels.serving.presets import SERVING_MODEL_NAMES

MODEL_NAMES = menu_order(SERVING_MODEL_NAMES)  # the CLI's presets, newest families first

GPU_NAMES = list(GPUS)
PRECISIONS = ["bf16", "fp8", "fp4"]
TPS = [1, 2, 4, 8]
FIELDS = [
    Field("cp_model", "Llama 3.1 70B", choice(MODEL_NAMES)),
    Field(
        "cp_gpus", ["H100 SXM", "H200 SXM", "B200"], comma_list(choice(GPU_NAMES), 12), join_list
    ),
    Field("cp_tp", [1, 2, 4, 8], comma_list(int_between(1, 8), 4), join_list),
    Field("cp_prec", ["bf16", "fp8"], comma_list(choice(PRECISIONS), 3), join_list),
    Field("cp_prompt", 1024, int_between(1, 131_072)),
    Field("cp_output", 256, int_between(1, 32_768)),
    Field("cp_ttft", 2000.0, float_between(1.0, 600_000.0)),
    Field("cp_tpot", 50.0, float_between(0.1, 10_000.0)),
    Field("cp_requests", 300, int_between(50, 3000)),
    Field("cp_policy", "engine", choice(["engine", "live", "reserve"])),
    Field("cp_engine", "vllm", choice(["vllm", "sglang", "trtllm"])),
    Field("cp_users", 0, int_between(0, 3000)),
    Field("cp_price", "", text(400)),  # read by _prices, whose error names the field
    Field("cp_target", 0.0, float_between(0.0, 1e6)),
]


def _prices(raw: str) -> tuple[tuple[str, float], ...]:
    """'H100 SXM=2.5, B200=5' -> ((name, price), ...); ValueError naming the field and the item
    (a typed bad price stays in the box with this error, rather than silently reverting)."""
    from costmodels.hardware import get_gpu

    field = LABELS["--price"]
    out = []
    for item in [part.strip() for part in str(raw).split(",") if part.strip()][:16]:
        name, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not sep or not 0 < price < 1e6:
            raise ValueError(f"{field}: {item[:30]!r} is not GPU=dollars per GPU-hour")
        try:
            out.append((get_gpu(name.strip()).name, price))
        except ValueError as exc:
            raise ValueError(f"{field}: {exc}") from None
    return tuple(out)


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.selectbox("Model", MODEL_NAMES, key="cp_model",
                  help=menu_help(MODEL_NAMES, "plan-serving"))
    bar.multiselect("GPUs", GPU_NAMES, key="cp_gpus")
    bar.multiselect("Tensor parallel (TP)", TPS, key="cp_tp")
    bar.multiselect(
        "Precisions",
        PRECISIONS,
        key="cp_prec",
        help="weights and GEMMs; the KV cache follows the engine (fp8 for fp8/fp4 "
        "checkpoints on trtllm, else 16-bit)",
    )
    bar.number_input("Prompt tokens", 1, 131_072, step=1, key="cp_prompt")
    bar.number_input("Output tokens", 1, 32_768, step=1, key="cp_output")
    bar.number_input("TTFT p90 target (ms)", 1.0, 600_000.0, key="cp_ttft")
    bar.number_input("TPOT p99 target (ms)", 0.1, 10_000.0, key="cp_tpot")
    bar.number_input(
        "Requests per simulation",
        50,
        3000,
        step=50,
        key="cp_requests",
        help="more: steadier percentiles, slower page",
    )
    bar.selectbox("Engine", ["vllm", "sglang", "trtllm"], key="cp_engine",
                  help="its documented defaults: scheduling limits, chunking, priority, KV "
                  "memory and KV dtype (commatlas plan-serving --engine)")  # fmt: skip
    bar.number_input("Concurrent users (0: Poisson rate search)", 0, 3000, step=1,
                     key="cp_users", help="a closed loop: targets judged at this many users")
    bar.selectbox(
        "KV policy",
        ["engine", "live", "reserve"],
        key="cp_policy",
        help="engine: the engine's own; live: vLLM's paged blocks with preemption; reserve: "
        "TensorRT-LLM's GUARANTEED_NO_EVICT",
    )
    bar.text_input(
        "Prices ($ per GPU-hour)",
        key="cp_price",
        help="e.g. H100 SXM=2.5, B200=5: ranks by output tokens per dollar",
    )
    bar.number_input("Total requests/s to serve (0: none)", 0.0, 1e6, key="cp_target")
    write_back(FIELDS)
    return problems


def main() -> None:
    st.title("Serving capacity")
    show_problems(sidebar())
    s = st.session_state
    if not s["cp_gpus"] or not s["cp_tp"] or not s["cp_prec"]:
        st.error("Choose at least one GPU, one TP degree and one precision.")
        return
    try:
        prices = _prices(s["cp_price"])
        frame = plan_frame(
            s["cp_model"],
            tuple(s["cp_gpus"]),
            tuple(s["cp_tp"]),
            tuple(s["cp_prec"]),
            int(s["cp_prompt"]),
            int(s["cp_output"]),
            float(s["cp_ttft"]),
            float(s["cp_tpot"]),
            int(s["cp_requests"]),
            s["cp_policy"],
            prices,
            float(s["cp_target"]),
            5,
            s["cp_engine"],
            int(s["cp_users"]),
        )
    except ValueError as exc:
        field_error(exc, LABELS)
        return
    st.caption(
        f"{s['cp_model']}, {s['cp_prompt']} prompt and {s['cp_output']} output tokens per "
        "request, "
        + (f"{s['cp_users']} concurrent users (closed loop)" if s["cp_users"] else
           "Poisson arrivals") + f", {s['cp_requests']} requests per simulation. Engine: "
        f"{s['cp_engine']}'s defaults (continuous batching, paged KV cache; speculative "
        "decoding off). Iteration costs from the operator model with "
        "the engine constants fitted on TensorRT-LLM v0.20 max-throughput runs; the five most "
        "promising deployments are simulated, the rest are closed-form estimates."
    )
    feasible = frame[frame["feasible"] & frame["simulated"]]
    if feasible.empty:
        st.warning("No deployment meets both targets: relax them or add GPUs.")
    else:
        best = feasible.iloc[0]
        st.info(
            f"Best: {best['deployment']} at "
            f"{format_number(best['output_tokens_per_s_per_gpu'])} output tokens/s per GPU "
            f"({format_number(best['requests_per_s_per_gpu'])} requests/s per GPU), TTFT p90 "
            f"{format_number(best['ttft_p90_ms'])} ms, TPOT p99 "
            f"{format_number(best['tpot_p99_ms'])} ms."
        )
        draw(bar_spec(frame))
    shown, longer = display_frame(frame)
    show_table(shown, COLUMNS, more=MORE, more_label="GPUs per instance, per dollar, replicas",
               widths={"note": "large"})  # fmt: skip
    st.caption(
        "TTFT and TPOT percentiles come from the simulation of the five most promising "
        "deployments; the others are closed-form estimates (— in those columns)."
        + "".join(f"  \n{line}" for line in longer)
    )


main()
