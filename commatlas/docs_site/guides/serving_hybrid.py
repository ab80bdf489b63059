"""Serving guide sections (issue 39): hybrid Mamba-2 models (their per-sequence state beside the
attention layers' cache, decode by batch) and the expert-parallel token exchange (the engines'
default all-to-all against DeepEP's kernels). Every number is computed at build time by
costmodels.serving (kv_cache, ssm_state, predict_serving)."""

from __future__ import annotations

from commatlas.docs_site.guides import _common as c
from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving import ServingLayout, kv_bytes_per_token, predict_serving
from costmodels.serving.ep_exchange import DEEPEP_LL_MAX_TOKENS
from costmodels.serving.presets import serving_shape
from costmodels.serving.ssm_state import state_bytes_per_sequence
from taxonomy import Taxonomy

HYBRIDS = ("Nemotron-H 8B", "Nemotron-H 56B", "Nemotron 3 Nano 30B-A3B")
HYBRID_BATCHES = (1, 16, 64, 256)
MOE = "Qwen3 30B-A3B"
HYBRID_COMMAND = ("commatlas predict-serving --model nemotron-h-8b --gpu h100 --tp 1 --batch 64 "
                  "--prompt-len 1024 --output-len 256 --json")  # fmt: skip
EP_COMMAND = ("commatlas predict-serving --model qwen3-30b-a3b --gpu h100 --tp 1 --ep 16 "
              "--batch 256 --prompt-len 1024 --output-len 256 --moe-a2a-backend deepep --json")


def _cluster() -> LLMCluster:
    gpu = get_gpu("H100 SXM")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


def state_rows() -> list[list[str]]:
    rows = []
    for name in HYBRIDS:
        s = preset_shape(name, 4096)
        kv, state = kv_bytes_per_token(s, 2), state_bytes_per_sequence(s)
        rows.append([name, str(s.hybrid_pattern.count("*")), str(s.hybrid_pattern.count("M")),
                     c.format_bytes(kv), c.format_bytes(state),
                     c.format_bytes(4096 * kv + state)])  # fmt: skip
    return rows


def hybrid_decode_rows() -> list[list[str]]:
    shape = preset_shape(HYBRIDS[0], 1280)
    rows = []
    for batch in HYBRID_BATCHES:
        p = predict_serving(shape, ServingLayout(tp=1), _cluster(), batch=batch, prompt_len=1024,
                            output_len=256)  # fmt: skip
        parts = p.decode_breakdown_s
        rows.append([str(batch), c.format_ms(parts["gemm"]), c.format_ms(parts["attention"]),
                     c.format_ms(p.tpot_s), c.format_bytes(p.memory_breakdown_bytes["kv_cache"],
                                                           binary=True)])  # fmt: skip
    return rows


def ep_rows() -> list[list[str]]:
    shape = serving_shape(MOE, 1280)
    rows = []
    for backend in ("alltoall", "deepep"):
        p = predict_serving(shape, ServingLayout(tp=1, ep=16, ep_backend=backend), _cluster(),
                            batch=256, prompt_len=1024, output_len=256)  # fmt: skip
        rows.append([backend, c.format_ms(p.decode_breakdown_s["ep_comm"]),
                     c.format_ms(p.tpot_s), c.format_ms(p.prefill_breakdown_s["ep_comm"]),
                     c.format_ms(p.prefill_s)])  # fmt: skip
    return rows


def hybrid_sections(tax: Taxonomy) -> list[str]:
    """The two sections, in the guide's markdown lines."""
    return [
        "## Hybrid Mamba-2 models",
        "",
        "A Mamba-2 layer keeps no keys and values: each running sequence carries a state of "
        "heads x head size x state size plus the convolution's last three inputs per layer, in "
        "the model's 16-bit dtype (vLLM's default), whatever its length. Only the attention "
        "layers cache per token. The paged pool sets each running sequence's state aside and "
        "counts tokens at the attention layers' rate; TP splits the Mamba-2 heads and groups as "
        "training does (one all-reduce per layer). Prefill runs the chunked SSD scan (its four "
        "batched products by the GEMM model, the chunk states memory-bound); a decode step "
        "reads and writes each sequence's state once per layer, memory-bound like attention.",
        "",
        *c.table(["model", "attention layers", "Mamba-2 layers", "KV per token (16-bit)",
                  "state per sequence", "4,096-token request"], state_rows()),  # fmt: skip
        f"{HYBRIDS[0]} on one H100 SXM, 1,024 prompt and 256 output tokens, bf16 (the "
        "attention column holds the Mamba-2 state updates and the 4 attention layers):",
        "",
        *c.table(["batch", "GEMM (ms)", "attention + SSM (ms)", "TPOT (ms)", "cache + state"],
                 hybrid_decode_rows()),  # fmt: skip
        "## Expert parallelism: the token exchange",
        "",
        "With --ep > --tp, attention groups serve their own requests and every token travels "
        "to its experts and back once per MoE layer. SGLang's default (--moe-a2a-backend none) "
        "and vLLM's (--all2all-backend allgather_reducescatter) use collectives, priced as an "
        "NCCL all-to-all; with DeepEP (--moe-a2a-backend deepep) a pass of at most "
        f"{DEEPEP_LL_MAX_TOKENS} tokens per GPU runs DeepEP's low-latency kernels (decode) and a "
        "larger one its normal kernels (prefill), both priced from DeepEP's published tables "
        "as the training model prices them. The EP group is placed inside a node or NVL72 rack "
        f"first. {MOE} at EP 16 on two 8-GPU H100 nodes, batch 256 (16 sequences per GPU), "
        f"1,024 prompt and 256 output tokens ({c.record_link(tax, 'nccl')} prices the "
        "all-to-all):",
        "",
        *c.table(["exchange", "decode EP (ms)", "TPOT (ms)", "prefill EP (ms)", "prefill (ms)"],
                 ep_rows()),  # fmt: skip
        f"Reproduce: `{HYBRID_COMMAND}` and `{EP_COMMAND}`.",
        "",
    ]
