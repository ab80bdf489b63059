"""The serving guide's engine sections (issue 29): continuous batching and paged KV memory
against the static batch, and a worked capacity plan under latency targets.

Every number is computed at build time by costmodels.serving (simulate_serving, capacity,
plan_serving) and costmodels.serving.trtllm_data (a dev run it is compared with).
"""

from __future__ import annotations

from commatlas.docs_site.guides import _common as c
from taxonomy import Taxonomy

MODEL = "Llama 3.1 70B"
GPUS = ("H100 SXM", "H200 SXM", "B200")
PROMPT, OUTPUT = 1024, 256
TTFT_S, TPOT_S = 2.0, 0.050
PRICES = {"H100 SXM": 2.5, "H200 SXM": 3.5, "B200": 5.0}  # illustrative $ per GPU-hour
TARGET = 100.0  # requests per second in all
PLAN_REQUESTS = 400
PLAN_COMMAND = (
    f"commatlas plan-serving --model llama-3.1-70b --gpus h100,h200,b200 --tp 1,2,4,8 "
    f"--precision bf16,fp8,fp4 --prompt-len {PROMPT} --output-len {OUTPUT} --slo-ttft-p90 "
    f'"2 s" --slo-tpot-p99 "50 ms" --price h100=2.5 h200=3.5 b200=5 --target-rate 100 '
    f"--requests {PLAN_REQUESTS} --top 5"
)
SIM_COMMAND = (
    f"commatlas predict-serving --model llama-3.1-70b --gpu h100 --tp 8 --precision fp8 "
    f"--kv-precision fp8 --mode server --rate 10 --requests 1000 --prompt-len {PROMPT} "
    f"--output-len {OUTPUT}"
)


def _cluster(name: str):  # noqa: ANN202 - an LLMCluster
    """One 8-GPU node of ``name`` (its own NVLink or PCIe): every deployment here is one node."""
    from costmodels.serving.trtllm_data import dev_cluster

    return dev_cluster(name)


def batching_rows() -> list[list[str]]:
    """The dev runs of Llama 3.3 70B FP8 on H200 at 128/128: measured, engine, static."""
    from costmodels.serving.baseline import static_tokens_per_s
    from costmodels.serving.requests import make_requests
    from costmodels.serving.simulate import simulate_serving
    from costmodels.serving.trtllm_data import dev_cluster, dev_engine, read_dev_rows

    rows = []
    for row in read_dev_rows():
        if (row.model, row.precision, row.gpu, row.input_len, row.output_len) != (
            "Llama-3.3-70B",
            "FP8",
            "H200",
            128,
            128,
        ):
            continue
        cluster, engine = dev_cluster(row.gpu), dev_engine(row)
        requests = make_requests(row.requests, prompt_len=128, output_len=128)
        sim = simulate_serving(row.shape, row.layout, cluster, requests, engine)
        static = static_tokens_per_s(row.shape, row.layout, cluster, 128, 128, engine.max_num_seqs)
        rows.append(
            [
                str(row.tp),
                f"{row.measured_tokens_per_s:,.0f}",
                f"{sim.output_tokens_per_s:,.0f}",
                f"{static:,.0f}",
                str(sim.max_concurrency_in_memory),
            ]
        )
    return rows


def memory_rows() -> list[list[str]]:
    """Sequences one 8 x H100 fp8 instance holds at once: whole reservation vs live context."""
    from costmodels.serving.capacity import memory_concurrency
    from costmodels.serving.engine import EngineConfig, kv_pool
    from costmodels.serving.layout import ServingLayout
    from costmodels.serving.presets import serving_shape

    rows = []
    layout = ServingLayout(8, precision="fp8", kv_precision="fp8")
    for prompt, output in ((1024, 1024), (2048, 8192), (128, 16384)):
        shape = serving_shape(MODEL, prompt + output)
        counts = []
        for policy in ("reserve", "live"):
            engine = EngineConfig(max_num_seqs=4096, policy=policy)
            pool = kv_pool(shape, layout, _cluster("H100 SXM"), engine)
            counts.append(memory_concurrency(pool, engine, prompt, output))
        rows.append(
            [
                f"{prompt:,} / {output:,}",
                f"{counts[0]:,}",
                f"{counts[1]:,}",
                f"{counts[1] / counts[0]:.2f}x",
            ]
        )
    return rows


def plan_rows() -> tuple[list[list[str]], int]:
    """The plan as ``PLAN_COMMAND`` runs it: the default engine (vLLM 0.10's limits per
    deployment, its KV-dtype rule; costmodels.serving.engine_presets)."""
    from costmodels.serving.engine_presets import engine_settings, kv_precision_for
    from costmodels.serving.layout import ServingLayout
    from costmodels.serving.plan import SLO, Deployment, plan_serving
    from costmodels.serving.presets import serving_shape
    from costmodels.serving.requests import make_requests

    shape = serving_shape(MODEL, PROMPT + OUTPUT)
    deployments = [
        Deployment(g, ServingLayout(tp, 1, 1, p, kv_precision_for("vllm", p), True, True))
        for g in ("H100 SXM", "H200 SXM", "B200")
        for tp in (1, 2, 4, 8)
        for p in ("bf16", "fp8", "fp4")
    ]
    requests = make_requests(
        PLAN_REQUESTS, mode="server", rate=1.0, prompt_len=PROMPT, output_len=OUTPUT
    )

    def vllm(d: Deployment, cluster: object) -> object:
        return engine_settings("vllm", None, shape=shape, layout=d.layout, cluster=cluster,
                               prompt_len=PROMPT, output_len=OUTPUT,
                               longest=PROMPT + OUTPUT).config  # fmt: skip

    rows = plan_serving(
        shape,
        deployments,
        _cluster,
        vllm,
        requests,
        SLO(TTFT_S, TPOT_S),
        PRICES,
        top=5,
        target_rate=TARGET,
    )
    table = []
    for r in [r for r in rows if r.simulated and r.feasible][:5]:
        table.append(
            [
                f"{r.gpu} TP{r.tp} {r.precision}",
                f"{r.requests_per_s_per_gpu:.3g}",
                f"{r.output_tokens_per_s_per_gpu:,.0f}",
                f"{r.output_tokens_per_dollar:,.0f}",
                f"{r.ttft_p90_s * 1e3:,.0f}",
                f"{r.tpot_p99_s * 1e3:.1f}",
                f"{r.replicas} x {r.gpus}",
            ]
        )
    screened = sum(1 for r in rows if not r.feasible and not r.simulated)
    return table, screened


def engine_sections(tax: Taxonomy) -> list[str]:
    batching = batching_rows()
    plan, screened = plan_rows()
    return [
        "## Continuous batching, paged KV memory",
        "",
        "Serving engines do not run a static batch. Every iteration (Orca's iteration-level "
        "scheduling; vLLM, TensorRT-LLM's in-flight batching) runs one decode token of each "
        "running sequence together with chunks of waiting prompts under a token budget "
        "(Sarathi-Serve's chunked prefill), so prompts are batched with each other and with the "
        "decodes, and a finished sequence's slot is refilled at once. The KV cache lives in "
        "blocks (vLLM's PagedAttention): a sequence holds the blocks of its live context, and "
        "when none is free the newest is preempted and recomputed later; TensorRT-LLM's "
        "default instead admits a request only when its prompt plus its whole output fits "
        f"(GUARANTEED_NO_EVICT). CommAtlas simulates exactly that "
        f"(`costmodels.serving.scheduler`; {c.record_link(tax, 'kv-cache-transfer')} covers "
        "the disaggregated variant), pricing each iteration's linear layers on all its tokens "
        "at once and its attention per sequence.",
        "",
        "Short prompts are where the difference shows: TensorRT-LLM v0.20 serving Llama 3.3 "
        "70B in FP8 on H200 at 128 prompt / 128 output tokens (the dev runs, trtllm-bench's "
        "own batch limits), output tokens/s of the whole instance:",
        "",
        *c.table(
            ["TP", "measured", "engine model", "static batch", "sequences in flight"], batching
        ),
        "The static model prices every prompt as its own weight-bound pass between decode "
        "steps; the engine batches them, as the engine does. Paged memory decides how many "
        "sequences fit: one 8 x H100 fp8 instance of Llama 3.1 70B holds this many requests "
        "at once when each reserves its whole context, against the mean live context "
        "(prompt + half the output) that paged blocks hold in steady state:",
        "",
        *c.table(
            ["prompt / output tokens", "whole reservation", "live context", "gain"], memory_rows()
        ),
        "## A worked capacity plan",
        "",
        f"Which GPU, TP degree and precision serve {MODEL} at {PROMPT:,} prompt and {OUTPUT} "
        f"output tokens per request with time to first token at most {TTFT_S:g} s for 90 % of "
        f"requests and time per output token at most {TPOT_S * 1e3:g} ms for 99 %, and how "
        f"many GPUs does {TARGET:g} requests/s take? `plan-serving` tries every deployment "
        "(here 3 GPUs x TP 1/2/4/8 x bf16/fp8/fp4 = 36), drops those that do not fit or miss a "
        f"target even alone ({screened} of them: no fp4 tensor cores on Hopper, 70B in bf16 "
        "on one H100 ...), estimates the rest in closed form, and simulates the most "
        f"promising with Poisson arrivals ({PLAN_REQUESTS} requests per run) to find the "
        "highest rate that still meets both targets. The prices are illustrative "
        f"(${PRICES['H100 SXM']:g}, ${PRICES['H200 SXM']:g} and ${PRICES['B200']:g} per "
        "GPU-hour; no source), replicas are for the whole target rate:",
        "",
        *c.table(
            [
                "deployment",
                "requests/s per GPU",
                "output tokens/s per GPU",
                "output tokens per $",
                "TTFT p90 (ms)",
                "TPOT p99 (ms)",
                "replicas x GPUs",
            ],
            plan,
        ),
        "Per GPU the rate under targets, not the peak throughput, ranks the deployments: a "
        "larger TP shortens each iteration (more requests meet the TPOT target) but divides "
        "the rate by more GPUs, and a deployment whose throughput needs a full batch may "
        "miss the TPOT target before it reaches it. Speculative decoding is off in every "
        "simulation.",
        "",
    ]


ENGINE_REPRODUCE = [
    f"- The capacity plan: `{PLAN_COMMAND}` (`--json` for the rows, `--rank dollar` to rank by "
    "price); the calculator's Serving capacity page runs the same search.",
    f"- One deployment under load: `{SIM_COMMAND}`.",
    "- The 128/128 rows against the static batch, for all 180 dev runs: "
    "`python benchmarks/serving_accuracy.py`.",
]
