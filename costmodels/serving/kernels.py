"""The kernels of one inference forward pass on one GPU: a layer, and the model's two ends.

The fusion set is the one serving engines ship; we follow vLLM's Llama layer
(vllm/model_executor/models/llama.py: fused residual-add + RMSNorm, one QKV GEMM, rotary, the
attention kernel that also writes the new keys and values into the paged cache, the output
GEMM, fused add + RMSNorm, one merged gate/up GEMM, ``silu_and_mul``, the down GEMM). GPT-style
models (no gated MLP) run LayerNorm, a residual add and GELU instead. Byte counts per element
(2-byte activations) are our reading of those kernels, as in costmodels/llm/frameworks.py.

``Work`` says what one pass computes: ``seqs`` sequences of ``q_len`` new tokens that attend to
``kv_len`` cached positions. Prefill of one prompt of P tokens is ``Work(1, P, P)`` (causal flash
attention, Dao et al. arXiv:2205.14135); a decode step of B sequences at context c is
``Work(B, 1, c)``: each query reads its sequence's whole cache (Flash-Decoding / vLLM's paged
attention V2 split the keys into partitions of 512 so the grid fills the SMs).

MoE layers (experts > 1): router GEMM and top-k, token permutation, grouped expert GEMMs over
the experts that received at least one token, activation and weighted combine. With T tokens
each routed to k of E experts uniformly, an expert receives none with probability
(1 - k/E)^T, so E (1 - (1 - k/E)^T) experts are touched (rounded to whole experts) and only
their weights are read: at batch 1 Mixtral reads 2 of its 8 experts. Shared experts
(``shape.shared_experts``) run every token as one more gated MLP, TP-sharded. A MoE model's
dense layers (``first_dense_layers``, ``moe_layer_step``; costmodels.serving.layers) run a plain
MLP of ``dense_ffn``; ``layer_kernels(..., moe=...)`` says which kind of layer to build.
Attention of a model with multi-head latent attention is costmodels.serving.mla's. Sliding-window
layers (GPT-OSS, issue 39) read only their window's keys: a layer's attention kernel is the mean
of a full layer's and a windowed one's, weighted by the share of windowed layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from costmodels.llm.attention import flash_kernels
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.layer_kinds import sliding_share
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.kv_cache import head_dim, kv_elements_per_layer, kv_heads_per_gpu
from costmodels.serving.layers import dense_ffn, is_moe
from costmodels.serving.layout import ServingLayout
from costmodels.serving.mla import mla_attention, mla_projections
from costmodels.serving.precision import gemm_dtype

DECODE_PARTITION = 512  # keys per block of vLLM's paged attention V2 (_PARTITION_SIZE)
ACT = 2.0  # bytes per activation element


@dataclass(frozen=True)
class Work:
    """One forward pass: ``seqs`` sequences x ``q_len`` new tokens against ``kv_len`` keys."""

    seqs: int
    q_len: int
    kv_len: int

    @property
    def tokens(self) -> int:
        return self.seqs * self.q_len

    @property
    def decode(self) -> bool:
        return self.q_len == 1


@dataclass(frozen=True)
class ExpertLoad:
    """What the experts on one GPU do in one MoE layer."""

    touched: int  # experts on this GPU that receive at least one token
    tokens_per_expert: int
    width: int  # FFN width of each local expert (f / tp when TP-sharded)


def expert_load(shape: TransformerShape, layout: ServingLayout, total_tokens: int) -> ExpertLoad:
    """Experts touched on one GPU when ``total_tokens`` tokens of the EP group are routed."""
    e, k = shape.experts, shape.top_k
    if layout.ep > 1:
        local, width, routed = e // layout.ep, shape.ffn_size, total_tokens * k / layout.ep
    else:  # every expert sharded over the TP group; every TP rank sees every token
        local, width, routed = e, shape.ffn_size // layout.tp, float(total_tokens * k)
    touched = max(1, min(local, round(local * (1.0 - (1.0 - k / e) ** total_tokens))))
    return ExpertLoad(touched, max(1, math.ceil(routed / touched)), width)


def _windowed(full: Kernel, band: Kernel, share: float) -> Kernel:
    """One layer's attention kernel averaged over full and sliding-window layers (``share`` of
    them windowed, issue 39: GPT-OSS), as the training model's layer_ops does."""
    return replace(full, flops=(1 - share) * full.flops + share * band.flops,
                   bytes=(1 - share) * full.bytes + share * band.bytes)  # fmt: skip


def _attention(shape: TransformerShape, work: Work, tp: int, kv_bytes: float) -> list[Kernel]:
    if shape.mla is not None:
        return mla_attention(shape, work.seqs, work.q_len, work.kv_len, tp, kv_bytes)
    share = sliding_share(shape)
    if share and work.kv_len > shape.sliding_window:  # sliding layers read the window only
        window = replace(work, kv_len=shape.sliding_window)
        full, band = _attention_core(shape, work, tp, kv_bytes), _attention_core(
            shape, window, tp, kv_bytes, causal=work.decode)  # fmt: skip
        return [_windowed(full[0], band[0], share), full[1]]
    return _attention_core(shape, work, tp, kv_bytes)


def _attention_core(shape: TransformerShape, work: Work, tp: int, kv_bytes: float,
                    causal: bool = True) -> list[Kernel]:  # fmt: skip
    d, heads, kv = head_dim(shape), shape.heads // tp, kv_heads_per_gpu(shape, tp)
    new_kv = float(work.tokens * kv_elements_per_layer(shape, tp))
    cache_write = memory_kernel("kv-cache-write", new_kv * (ACT + kv_bytes))
    if not work.decode:  # a window's band: every query scores w keys (not causal within it)
        fwd, _ = flash_kernels(work.seqs, work.q_len, work.kv_len, heads, kv, d, causal)
        return [fwd, cache_write]
    cache_read = 2.0 * work.seqs * kv * work.kv_len * d * kv_bytes
    q_and_o = 2.0 * work.seqs * heads * d * ACT
    blocks = work.seqs * heads * math.ceil(work.kv_len / DECODE_PARTITION)
    decode = Kernel("decode-attention", "attention", 4.0 * work.seqs * heads * work.kv_len * d,
                    cache_read + q_and_o, flash="fwd", flash_blocks=blocks,
                    launches=2 if work.kv_len > DECODE_PARTITION else 1)  # fmt: skip
    return [decode, cache_write]


def _mlp(shape: TransformerShape, layout: ServingLayout, work: Work, total_tokens: int,
         dtype: str, wb: float, moe: bool) -> list[Kernel]:  # fmt: skip
    h, t = shape.hidden, work.tokens
    gate = 2 if shape.gated_mlp else 1
    act_bytes = 6.0 if shape.gated_mlp else 4.0  # silu_and_mul: read 2, write 1; GELU 1 + 1
    if not moe:
        f = dense_ffn(shape) // layout.tp
        return [gemm_kernel("mlp-in", "gemm", GemmShape(t, gate * f, h, 1, wb, ACT), dtype),
                memory_kernel("activation", act_bytes * t * f),
                gemm_kernel("mlp-out", "gemm", GemmShape(t, h, f, 1, wb, ACT), dtype)]  # fmt: skip
    load = expert_load(shape, layout, total_tokens)
    m, f, b = load.tokens_per_expert, load.width, load.touched
    routed = float(m * b) * h * ACT
    shared: list[Kernel] = []
    if shape.shared_experts:
        fs = shape.shared_experts * shape.ffn_size // layout.tp
        shared = [
            gemm_kernel("shared-in", "gemm", GemmShape(t, gate * fs, h, 1, wb, ACT), dtype),
            memory_kernel("activation", act_bytes * t * fs),
            gemm_kernel("shared-out", "gemm", GemmShape(t, h, fs, 1, wb, ACT), dtype),
        ]
    return shared + [
        gemm_kernel("router", "gemm", GemmShape(t, shape.experts, h), "bf16"),
        memory_kernel("topk-softmax", 4.0 * t * shape.experts),
        memory_kernel("moe-permute", 2.0 * routed, launches=2),
        gemm_kernel("expert-in", "gemm", GemmShape(m, gate * f, h, b, wb, ACT), dtype),
        memory_kernel("activation", act_bytes * m * b * f),
        gemm_kernel("expert-out", "gemm", GemmShape(m, h, f, b, wb, ACT), dtype),
        memory_kernel("moe-combine", routed + t * h * ACT),
    ]


def _projections(shape: TransformerShape, t: int, tp: int, dtype: str,
                 wb: float) -> tuple[list[Kernel], list[Kernel], int]:  # fmt: skip
    """(kernels before attention, the output projection, query width on this GPU)."""
    h = shape.hidden
    if shape.mla is not None:
        before, out = mla_projections(shape, t, tp, dtype, wb)
        return before, out, shape.heads // tp * shape.mla.v_head_dim
    d = head_dim(shape)
    q, kv = shape.heads // tp * d, kv_heads_per_gpu(shape, tp) * d
    before = [gemm_kernel("qkv", "gemm", GemmShape(t, q + 2 * kv, h, 1, wb, ACT), dtype)]
    if shape.gated_mlp:
        before.append(memory_kernel("rotary", 4.0 * t * (q + kv)))
    return before, [gemm_kernel("attention-out", "gemm", GemmShape(t, h, q, 1, wb, ACT), dtype)], q


def layer_kernels(shape: TransformerShape, layout: ServingLayout, work: Work,
                  total_tokens: int | None = None, moe: bool | None = None,
                  attention: bool = True) -> tuple[Kernel, ...]:  # fmt: skip
    """One layer's forward kernels on one GPU; ``total_tokens``: tokens of the whole EP group
    routed in this pass (default: this GPU's); ``moe``: an expert layer (default: whenever the
    model has experts); ``attention=False`` leaves out the attention core (the kernels that read
    or write the cache), whose cost the engine model prices per sequence."""
    h, t, tp = shape.hidden, work.tokens, layout.tp
    moe = is_moe(shape) if moe is None else moe
    dtype = gemm_dtype(layout.precision)
    wb = float(layout.weight_bytes)
    norm_bytes = 8.0 if shape.gated_mlp else 4.0  # fused add + RMSNorm / plain LayerNorm
    before, projection, q = _projections(shape, t, tp, dtype, wb)
    out: list[Kernel] = [memory_kernel("norm", norm_bytes * t * h), *before]
    core = _attention(shape, work, tp, float(layout.kv_bytes))
    out += core if attention else [k for k in core if k.name == "kv-cache-write"]
    out += projection
    out.append(memory_kernel("norm", norm_bytes * t * h))
    if not shape.gated_mlp:  # the two residual adds GPT-style blocks run on their own
        out.append(memory_kernel("residual-add", 6.0 * t * h * 2, launches=2))
    out += _mlp(shape, layout, work, total_tokens or t, dtype, wb, moe)
    if dtype in ("fp8", "fp4"):  # quantise attention-out's and MLP-out's inputs (read 2, write 1)
        f_local = dense_ffn(shape) // tp if not moe else 0
        out.append(memory_kernel(f"{dtype}-quantize", 3.0 * t * (q + f_local), launches=2))
    return tuple(out)


def first_stage_kernels(shape: TransformerShape, work: Work) -> tuple[Kernel, ...]:
    """Embedding gather of the new tokens (read + write, 2 bytes each)."""
    return (memory_kernel("embedding", 4.0 * work.tokens * shape.hidden),)


def last_stage_kernels(shape: TransformerShape, tp: int, work: Work) -> tuple[Kernel, ...]:
    """Final norm, the logit GEMM for the last position of every sequence (vLLM prunes the
    others), and sampling over fp32 logits (cast 2 + 4, softmax/argmax reads 4: an estimate)."""
    vocab = math.ceil(shape.vocab / tp)
    return (
        memory_kernel("final-norm", 4.0 * work.tokens * shape.hidden),
        gemm_kernel("logits", "gemm", GemmShape(work.seqs, vocab, shape.hidden), "bf16"),
        memory_kernel("sampling", 10.0 * work.seqs * shape.vocab, launches=3),
    )
