"""Activation memory of training, by framework and recomputation mode: what one layer stores for
the backward pass, and the working set on top of it at the peak.

Per token and layer on one GPU (bytes; h hidden, f the layer's MLP width, q / kv / v the query,
key-value and value widths, t = tp, 2-byte activations), generalising Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models" (2022), Sec. 4.1:

- replicated over t unless sequence parallelism shards them: the inputs of the two norms and of
  the QKV and first MLP GEMMs (8h) and, GPT style, the two dropout masks (2h) = Korthikanti's 10;
- split over t: Q, K, V and the attention output (2q + 4kv + 2v: 8h for MHA), and the MLP:
  GeLU input and output (4f: 16h at f = 4h, so 24 with the attention: Korthikanti's 24/t), a
  SwiGLU's gate/up output and product (6f; eager PyTorch also keeps the SiLU output, 8f); MoE
  layers store that per routed copy (top_k + shared experts) plus the permuted tokens (2h each;
  a LatentMoE's at its latent width l, and its combined latent, 2l);
  MLA also keeps its two latents (2 (q_lora + kv_lora + rope), replicated);
- the attention scores 5 a s / t (Korthikanti's 5as/h term: softmax input and output, dropout
  mask and output) only without flash attention (``megatron-legacy``): flash attention stores
  O(s) (the output and one log-sum-exp per row), not O(s^2) (Dao et al., FlashAttention,
  arXiv:2205.14135, Sec. 3.1). This was the error that made every NeMo H100 run "not fit".

Recomputation: ``selective`` drops the score term (Korthikanti Eq. 6); ``full`` keeps the layer
input (2h, / t with sequence parallelism) on ``recompute_every``-th layers and everything on the
others; ``op`` (torchtitan's per-op policy: outputs of every odd matmul, of attention and of the
TP reduce-scatters) keeps the block input, Q, V, the attention output, the first MLP matmul's
output and the block output. For GPT shapes with ``megatron-legacy`` kernels this is exactly
Korthikanti's Table 2 (tests/costmodels/test_llm_size_memory.py types the rows).

Working set at the peak, on top of what is stored: the layer being recomputed under full
recomputation (its whole activations), or on the last stage the logits and loss buffers
(tokens x V / t x ``LOSS_BUFFER_BYTES``: bf16 logits, their fp32 copy and gradient for eager
and Megatron cross-entropy, bf16 only when the loss is compiled), whichever is larger.
"""

from __future__ import annotations

from functools import lru_cache

from costmodels.llm.layer_kinds import Kind, counts_of, dense_ffn, head_dim, value_width
from costmodels.llm.linear_shapes import local_kv_heads
from costmodels.llm.mamba import activation_bytes_per_token as mamba_activation_bytes
from costmodels.llm.shapes import Layout, TransformerShape

LOSS_BUFFER_BYTES = {
    "megatron": 10.0,
    "megatron-legacy": 10.0,
    "pytorch": 10.0,
    "pytorch-compile": 4.0,
}  # fmt: skip  ESTIMATES (module docstring)
FUSED_LOSS_BYTES = 2.0  # in-place fused cross-entropy: the bf16 logits (costmodels/llm/recipe.py)


def _mlp_bytes(shape: TransformerShape, width: int, framework: str) -> float:
    """Per token, one MLP of ``width`` (before the t split)."""
    if not shape.gated_mlp:
        return 4.0 * width
    return (8.0 if framework == "pytorch" else 6.0) * width


def _permuted(shape: TransformerShape) -> float:
    """Per token, a MoE layer's permuted routed copies (2 bytes at the expert width: hidden, or
    a LatentMoE's latent, issue 39) and a LatentMoE's combined latent (fc2_latent_proj's input)."""
    return 2.0 * shape.top_k * shape.expert_width + 2.0 * shape.moe_latent


def _block_bytes(shape: TransformerShape, layout: Layout, framework: str, kind: str,
                 recompute: str) -> float:  # fmt: skip
    """A hybrid layer (issue 39): its norm and mixer inputs (4h, / t with sequence parallelism)
    and its mixer's own: a Mamba-2 mixer's (costmodels/llm/mamba.py), or the attention or MLP
    half of a transformer layer's split terms (module docstring); full recomputation keeps the
    layer input only, selective and op as none."""
    t, h = layout.tp, shape.hidden
    kept_input = 2.0 * h / (t if layout.sequence_parallel else 1)
    if recompute == "full":
        k = layout.recompute_every
        return kept_input / k + _block_bytes(shape, layout, framework, kind, "none") * (1 - 1 / k)
    if kind == "M":
        assert shape.mamba is not None  # TransformerShape holds it
        return 2 * kept_input + mamba_activation_bytes(shape.mamba, t)
    if kind == "*":
        d = head_dim(shape)
        core = (2.0 * shape.heads * d + 2.0 * value_width(shape)) / t
        return 2 * kept_input + core + 4.0 * local_kv_heads(shape, t) * d
    if kind == "-":
        return 2 * kept_input + _mlp_bytes(shape, dense_ffn(shape), framework) / t
    copies = shape.top_k + shape.shared_experts
    routed = copies * _mlp_bytes(shape, shape.ffn_size, framework) + _permuted(shape)
    return 2 * kept_input + routed / t


@lru_cache(maxsize=4096)
def layer_bytes_per_token(shape: TransformerShape, layout: Layout, framework: str, moe: Kind,
                          recompute: str | None = None,
                          dropout: bool | None = None) -> float:  # fmt: skip
    """Bytes one layer stores per token of its micro-batch (module docstring); ``dropout`` None:
    GPT-style shapes (no gated MLP) store two dropout masks, Llama-style ones none. A hybrid
    model's layer kind (a BLOCK_KINDS character) is ``_block_bytes``."""
    recompute = layout.recompute if recompute is None else recompute
    if isinstance(moe, str):
        return _block_bytes(shape, layout, framework, moe, recompute)
    t, h, sp = layout.tp, shape.hidden, layout.sequence_parallel
    masks = (not shape.gated_mlp) if dropout is None else dropout
    replicated = 8.0 * h + (2.0 * h if masks else 0.0)
    d = head_dim(shape)
    q = shape.heads * d if shape.mla is None else shape.heads * (
        shape.mla.qk_nope_head_dim + shape.mla.qk_rope_head_dim)  # fmt: skip
    if shape.mla is None:
        kv_local = 4.0 * local_kv_heads(shape, t) * d  # K and V of the local kv heads
    else:  # MLA's expanded per-head keys (as wide as the queries) and values
        kv_local = (2.0 * q + 2.0 * value_width(shape)) / t
    split = 2.0 * q + 2.0 * value_width(shape)
    if moe:
        copies = shape.top_k + shape.shared_experts
        split += copies * _mlp_bytes(shape, shape.ffn_size, framework) + _permuted(shape)
    else:
        split += _mlp_bytes(shape, dense_ffn(shape), framework)
    if shape.mla is not None:
        m = shape.mla
        replicated += 2.0 * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)
    scores = 5.0 * shape.heads * shape.seq_len if framework == "megatron-legacy" else 0.0
    full = (replicated / t if sp else replicated) + split / t + kv_local + scores / t
    if recompute == "none":
        return full
    if recompute == "selective":
        return full - scores / t
    kept_input = 2.0 * h / (t if sp else 1)
    if recompute == "op":
        # Q, the attention output, V (half of K and V), the first MLP matmul, the block output
        return kept_input + (2.0 * q + 2.0 * value_width(shape)) / t + kv_local / 2 + (
            2.0 * _first_matmul_width(shape, moe) + 2.0 * h) / t  # fmt: skip
    k = layout.recompute_every
    return kept_input / k + full * (1 - 1 / k)


def _first_matmul_width(shape: TransformerShape, moe: bool) -> float:
    """Width of the first MLP matmul's output (w1: the gate of a SwiGLU), all copies."""
    if moe:
        return float((shape.top_k + shape.shared_experts) * shape.ffn_size)
    return float(dense_ffn(shape))


def micro_batches_in_flight(layout: Layout) -> float:
    """Micro-batches whose activations the first pipeline stage holds at its peak."""
    pp, m = layout.pp, layout.micro_batches
    if layout.schedule == "gpipe":
        return float(m)  # all forwards run before the first backward
    if layout.schedule == "interleaved" or layout.interleave > 1:
        return pp * (1 + (pp - 1) / (pp * layout.interleave))
    return float(min(pp, m))  # 1F1B: pp in flight when the pipeline is full


@lru_cache(maxsize=4096)
def stored_activation_bytes(shape: TransformerShape, layout: Layout, framework: str,
                            layers: range, dropout: bool | None = None) -> float:  # fmt: skip
    """Activations the first stage stores: per layer x its layers x micro-batches in flight."""
    tokens = layout.micro_batch * shape.seq_len / layout.cp
    counts = counts_of(shape, layers)
    per_mb = tokens * sum(
        n * layer_bytes_per_token(shape, layout, framework, moe, dropout=dropout)
        for moe, n in counts.items()
    )
    return per_mb * micro_batches_in_flight(layout)


@lru_cache(maxsize=4096)
def working_set_bytes(shape: TransformerShape, layout: Layout, framework: str,
                      last_stage: bool, fused_loss: bool = False,
                      dropout: bool | None = None) -> float:  # fmt: skip
    """The peak's working set beyond the stored activations (module docstring); ``fused_loss``:
    an in-place fused cross-entropy keeps only the 16-bit logits (FUSED_LOSS_BYTES)."""
    tokens = layout.micro_batch * shape.seq_len / layout.cp
    layer = 0.0
    if layout.recompute in ("full", "op"):
        kinds = set(shape.hybrid_pattern) or {shape.experts > 1}  # the largest layer recomputed
        layer = max(layer_bytes_per_token(shape, layout, framework, moe, "none", dropout)
                    for moe in kinds) * tokens  # fmt: skip
    logits = 0.0
    if last_stage:
        per = FUSED_LOSS_BYTES if fused_loss else LOSS_BUFFER_BYTES.get(framework, 10.0)
        logits = tokens * shape.vocab / layout.tp * per
    return max(layer, logits)
