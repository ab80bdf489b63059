"""Guide: serving a large model: the KV cache, one decode step, published latencies, batching
and disaggregated prefill/decode pools (issue 19, part 1); continuous batching, paged memory and
a worked capacity plan (issue 29, commatlas/docs_site/guides/serving_engine.py).

Every number is computed at build time by costmodels.serving (predict_serving, kv_cache,
transfer, balance) and costmodels.serving.published (the measurements it is checked against).
"""

from __future__ import annotations

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides.serving_engine import ENGINE_REPRODUCE, engine_sections
from commatlas.docs_site.guides.serving_hybrid import hybrid_sections
from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving import (
    RequestCost,
    ServingLayout,
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_transfer,
    predict_serving,
    prefill_decode_ratio,
    transfer_link,
)
from costmodels.serving.published import SOURCE, nemo_comparisons
from taxonomy import Taxonomy

MODELS = ("Llama 2 7B", "Llama 3.1 8B", "Llama 3.1 70B", "Mixtral 8x7B", "Qwen 2.5 72B",
          "GPT-OSS 120B")
BIG, SMALL = "Llama 3.1 70B", "Llama 2 7B"
LINKS = ("nvlink", "InfiniBand NDR", "RoCE 400", "100 GbE")
BATCHES = (1, 4, 16, 64, 256)
PARTS = ("gemm", "attention", "memory_bound", "tp_comm")
MIX = ((0.7, 512, 256), (0.3, 4096, 256))  # (share, prompt, output): chat and long documents


def cluster() -> LLMCluster:
    gpu = get_gpu("H100 SXM")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


def serve(model: str, tp: int, batch: int = 1, prompt: int = 128, output: int = 128):  # noqa: ANN201
    shape = preset_shape(model, prompt + output)
    return predict_serving(shape, ServingLayout(tp=tp), cluster(), batch=batch,
                           prompt_len=prompt, output_len=output)  # fmt: skip


def kv_rows() -> list[list[str]]:
    rows = []
    for name in MODELS:
        s = preset_shape(name, 4096)
        per_token = kv_bytes_per_token(s, 2)
        rows.append([name, str(s.layers), f"{s.kv_head_count} of {s.heads}",
                     c.format_bytes(per_token), c.format_bytes(kv_bytes_per_token(s, 1)),
                     c.format_bytes(kv_bytes_per_request(s, 4096, 2))])  # fmt: skip
    return rows


def decode_rows() -> list[list[str]]:
    rows = []
    for model, tp in ((SMALL, 1), (BIG, 8)):
        p = serve(model, tp)
        parts = p.decode_breakdown_s
        ar = p.decode_tp_allreduce
        regime = (f"{ar['algorithm']}/{ar['protocol']}, {ar['seconds'] * 1e6:.3g} µs"
                  if ar["algorithm"] != "none" else "none")  # fmt: skip
        rows.append([f"{model}, TP {tp}", *(c.format_ms(parts[k]) for k in PARTS),
                     c.format_ms(p.tpot_s), regime])  # fmt: skip
    return rows


def published_rows() -> list[list[str]]:
    return [
        [r.gpu, str(r.tp), f"{r.measured_ms:.1f}", f"{r.predicted_ms:.1f}",
         f"{100 * r.error:+.1f} %", f"{r.tpot_ms:.2f}"]
        for r in nemo_comparisons()
    ]  # fmt: skip


def batch_rows() -> list[list[str]]:
    rows = []
    for batch in BATCHES:
        p = serve(BIG, 8, batch, 1024, 256)
        rows.append([str(batch), c.format_ms(p.tpot_s), f"{p.decode_tokens_per_s_per_gpu:,.0f}",
                     c.format_bytes(p.memory_per_gpu_bytes, binary=True),
                     "yes" if p.fits else "no"])  # fmt: skip
    return rows


def transfer_rows() -> list[list[str]]:
    shape, layout = preset_shape(BIG, 2304), ServingLayout(tp=8)
    prefill = serve(BIG, 8, 1, 2048, 256).prefill_s
    rows = []
    for name in LINKS:
        link = transfer_link(name, get_gpu("H100 SXM"))
        whole = kv_transfer(shape, layout, 2048, link, prefill)
        layered = kv_transfer(shape, layout, 2048, link, prefill, "layer-wise")
        label = "NVLink (one node)" if name == "nvlink" else link.description.split(":")[0]
        rows.append([label, c.format_bandwidth(link.bandwidth_Bps),
                     c.format_ms(whole.seconds), c.format_ms(layered.exposed_s)])  # fmt: skip
    return rows


def mix_ratio() -> float:
    mix = []
    for share, prompt, output in MIX:
        p = serve(BIG, 8, 32, prompt, output)
        mix.append(RequestCost(share, p.prefill_s, output, p.tpot_s, 32))
    return prefill_decode_ratio(mix, 8, 8)


def page_text(tax: Taxonomy) -> str:
    big = serve(BIG, 8)
    ar = big.decode_tp_allreduce
    big_shape = preset_shape(BIG, 2304)
    request = 2048 * kv_bytes_per_token(big_shape)
    lines = [
        "# Serving a large model: decode time and KV-cache traffic",
        "",
        "**The question.** How long does a served model take to the first token and per output "
        "token on a given GPU and TP x PP (x EP) layout, how large is its key-value cache, and "
        "what does moving that cache between a prefill and a decode pool cost? CommAtlas prices "
        "every kernel of a forward pass with the training model's operator model (its fitted "
        "constants, not refitted on serving) and every collective with the NCCL model.",
        "",
        "## The KV cache",
        "",
        "Every layer keeps a key and a value vector per key-value head for every token: "
        "2 x layers x KV heads x head size x bytes. Grouped-query attention shrinks it by "
        "heads / KV heads, an fp8 cache halves it. Sliding-window layers (GPT-OSS: every "
        "second layer, a 128-token window) keep only the window: a 4,096-token GPT-OSS-120B "
        "request caches 2 KiB x (18 x 4,096 + 18 x 128) = 148.5 MiB, not 288 MiB, and the paged "
        "pool counts tokens at the full-attention layers' rate after setting aside each running "
        "sequence's window (about twice the context of an all-full-attention cache); decode "
        "and prefill attention on those layers read and score the window only. Hybrid "
        "Mamba-2 models (Nemotron-H, Nemotron 3) cache keys and values on their attention "
        "layers only and carry a fixed state per sequence (below).",
        "",
        *c.table(
            [
                "model",
                "layers",
                "KV heads",
                "per token (16-bit)",
                "per token (fp8)",
                "4,096-token request",
            ],
            kv_rows(),
        ),  # fmt: skip
        "## One decode step",
        "",
        "Batch 1 on H100 SXM, 128 prompt and 128 output tokens, bf16 (ms per token by part). A "
        "decode step reads every weight once (GEMMs at the fitted share of HBM bandwidth, split "
        "over the SMs by split-K) and the whole cache, so small-batch decode is "
        "memory-bandwidth-bound; each kernel also pays the fitted launch gap.",
        "",
        *c.table(
            [
                "model",
                "GEMM (ms)",
                "attention (ms)",
                "memory-bound (ms)",
                "TP comm (ms)",
                "TPOT (ms)",
                "TP all-reduce",
            ],
            decode_rows(),
        ),  # fmt: skip
        f"The {BIG} TP all-reduce carries one token's hidden state, {ar['bytes'] / 1e3:.3g} kB: "
        f"NCCL's tuner picks the LL protocol and the call costs {ar['seconds'] * 1e6:.3g} µs, "
        f"{100 * ar['latency_s'] / ar['seconds']:.0f} % of it latency, so the "
        f"{2 * big_shape.layers} all-reduces of a token are latency-bound, not bandwidth-bound. "
        f"See {c.record_link(tax, 'megatron-tp')} and {c.record_link(tax, 'nccl')}.",
        "",
        "## Against published latencies",
        "",
        f"{SOURCE}: measured request latency against the prediction (first token from the "
        "prefill, then 19 decode steps). These rows were not used to fit anything. No published "
        "70B-class decode measurement at TP 8 on H100 with a stated configuration was found, "
        "so that case is not compared.",
        "",
        *c.table(
            ["GPU", "TP", "measured ms", "predicted ms", "error", "predicted TPOT ms"],
            published_rows(),
        ),  # fmt: skip
        "## Batching",
        "",
        f"{BIG} on 8 H100 SXM (TP 8), 1,024 prompt and 256 output tokens: larger batches "
        "share the weight reads, so throughput per GPU grows much faster than the time per "
        "token, until the cache no longer fits.",
        "",
        *c.table(
            ["batch", "TPOT (ms)", "decode tokens/s per GPU", "memory per GPU", "fits"],
            batch_rows(),
        ),  # fmt: skip
        "## Disaggregated prefill and decode",
        "",
        f"A 2,048-token {BIG} prompt leaves a {c.format_bytes(request)} cache; the 8 prefill "
        "GPUs each send their KV heads' share at once over their own path. Sent whole after "
        "the prefill it all adds to the first token; sent layer by layer while the prefill "
        "runs, only what the link cannot hide does (the disaggregated designs of "
        f"{c.record_link(tax, 'splitwise')} and {c.record_link(tax, 'mooncake')} both move "
        "this cache between machines).",
        "",
        *c.table(["path", "per GPU", "whole (ms)", "layer-wise, exposed (ms)"], transfer_rows()),
        f"Pool sizes: a mix of {MIX[0][0]:.0%} chat requests ({MIX[0][1]} prompt / {MIX[0][2]} "
        f"output tokens) and {MIX[1][0]:.0%} long documents ({MIX[1][1]} / {MIX[1][2]}), "
        f"decoded 32 at a time, needs {mix_ratio():.2f} prefill GPUs per decode GPU to keep both "
        f"pools equally busy ({c.record_link(tax, 'distserve')} sizes its pools against latency "
        f"targets as well). See {c.record_link(tax, 'kv-cache-transfer')}.",
        "",
        *hybrid_sections(tax),
        *engine_sections(tax),
        *c.reproduce(
            [
                "- The 70B rows: `commatlas predict-serving --model llama-3.1-70b --gpu h100 "
                "--tp 8 --batch 1 --prompt-len 128 --output-len 128 --json`.",
                "- Disaggregated: `commatlas predict-serving --model llama-3.1-70b --gpu h100 "
                "--tp 8 --batch 32 --prompt-len 2048 --output-len 256 --disaggregated "
                '--prefill-gpus 8 --decode-gpus 16 --transfer-link "InfiniBand NDR" '
                "--transfer-mode layer-wise`.",
                "- In Python: `costmodels.serving.predict_serving(shape, ServingLayout(tp=8), "
                "cluster, batch=..., prompt_len=..., output_len=...)`.",
                *ENGINE_REPRODUCE,
            ]
        ),  # fmt: skip
    ]
    return "\n".join(lines)


def files(tax: Taxonomy) -> Files:
    return {"generated/guides/serving.md": page_text(tax)}
