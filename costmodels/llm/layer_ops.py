"""Every kernel of one transformer layer's forward and backward pass on one GPU, per micro-batch.

Megatron-style sharding (Shoeybi et al. 2019, arXiv:1909.08053): the QKV and first MLP GEMMs
are column-parallel (output split over t), the attention output and second MLP GEMMs
row-parallel (input split over t). With T = micro-batch x s/cp tokens on the GPU:

=================  ====================  ==============================================
GEMM (forward)     m x n x k             backward (same FLOPs each)
=================  ====================  ==============================================
qkv                T x (q + 2 kv)/t x h  dgrad T x h x (q + 2 kv)/t; wgrad h x (...) x T
attention output   T x h x h/t           dgrad T x h/t x h;         wgrad h/t x h x T
MLP in (x2 gated)  T x f/t x h           dgrad T x h x f/t;         wgrad h x f/t x T
MLP out            T x h x f/t           dgrad T x f/t x h;         wgrad f/t x h x T
=================  ====================  ==============================================

so a GPT layer (f = 4h, full attention) does 24 T h^2 / t GEMM FLOPs forward and twice that
backward, as in Narayanan et al. SC'21. The attention core is costmodels/llm/attention.py;
the element-wise ops come from the framework's fusion set (costmodels/llm/frameworks.py).

MoE (``experts > 1``): a router GEMM (T x E x h) and grouped expert GEMMs over the T x top_k
routed tokens, E/ep experts per GPU (balanced routing assumed), plus the token permutation
and its inverse (read + write of T top_k h, twice each way). Dense layers are not mixed in.

FP8 (Transformer Engine delayed scaling; Micikevicius et al. arXiv:2209.05433 and the TE
docs): the four linear layers' GEMMs take fp8 inputs. Inputs that do not come out of a fused
norm (attention output, MLP activation) and every output gradient pass through a
cast-transpose kernel (read 2 bytes, write 1 byte twice: the tensor and its transpose); each
fp8 GEMM adds an amax/scale bookkeeping launch per pass; the weights are cast (and
transposed) once per optimizer step, not per micro-batch (costed in ``weight_cast_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.llm.attention import flash_kernels, unfused_kernels
from costmodels.llm.frameworks import ElementwiseOp, KernelSet
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.precision import linear_gemm_dtype
from costmodels.llm.shapes import TransformerShape


@dataclass(frozen=True)
class LayerShard:
    """What one GPU holds of a layer for one micro-batch (all sizes in elements)."""

    micro_batch: int
    seq_local: int  # s / cp queries on this GPU
    seq_kv: int  # keys each query attends to (s)
    tp: int
    sequence_parallel: bool
    ep: int = 1

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq_local


@dataclass(frozen=True)
class LayerKernels:
    forward: tuple[Kernel, ...]
    backward: tuple[Kernel, ...]
    attention_forward: tuple[Kernel, ...]  # what selective recomputation re-runs


def _linear_shapes(
    shape: TransformerShape, shard: LayerShard
) -> tuple[list[tuple[str, int, int, int]], int]:
    """(name, m, n, k) of the forward GEMMs of the linear layers, and the experts per GPU
    (the batch of the grouped expert GEMMs; 1 for a dense layer)."""
    t, tokens, h = shard.tp, shard.tokens, shape.hidden
    d = h // shape.heads
    q_local, kv_local = shape.heads // t * d, max(1, shape.kv_head_count // t) * d
    f_local = shape.ffn_size // t
    mlp_in = f_local * (2 if shape.gated_mlp else 1)
    gemms = [("qkv", tokens, q_local + 2 * kv_local, h), ("attention-out", tokens, h, q_local)]
    if shape.experts == 1:
        return [*gemms, ("mlp-in", tokens, mlp_in, h), ("mlp-out", tokens, h, f_local)], 1
    local_experts = max(1, shape.experts // shard.ep)
    per_expert = max(1, tokens * shape.top_k * shard.ep // shape.experts)
    gemms += [("expert-in", per_expert, mlp_in, h), ("expert-out", per_expert, h, f_local),
              ("router", tokens, shape.experts, h)]  # fmt: skip
    return gemms, local_experts


def _elements(shape: TransformerShape, shard: LayerShard) -> dict[str, float]:
    t, tokens = shard.tp, shard.tokens
    d = shape.hidden // shape.heads
    heads, kv = shape.heads // t, max(1, shape.kv_head_count // t)
    norm_tokens = tokens / t if shard.sequence_parallel else tokens
    return {
        "h": norm_tokens * shape.hidden,
        "f": tokens * shape.ffn_size / t * shape.top_k,
        "qk": tokens * (heads + kv) * d,
        "ctx": tokens * heads * d,
        "scores": float(shard.micro_batch * heads * shard.seq_local * shard.seq_kv),
    }


def _elementwise(
    ops: tuple[ElementwiseOp, ...], elements: dict[str, float], backward: bool
) -> list[Kernel]:
    out = []
    for op in ops:
        kernels, per_element = (
            (op.bwd_kernels, op.bwd_bytes) if backward else (op.fwd_kernels, op.fwd_bytes)
        )
        if kernels and op.count:
            out.append(memory_kernel(op.name, op.count * per_element * elements[op.elements],
                                     launches=op.count * kernels))  # fmt: skip
    return out


def layer_kernels(
    shape: TransformerShape, shard: LayerShard, precision: str, kernel_set: KernelSet
) -> LayerKernels:
    """Forward and backward kernels of one layer for one micro-batch on one GPU."""
    dtype = linear_gemm_dtype(precision)
    in_bytes = 1.0 if dtype == "fp8" else 2.0
    grad_out = 4.0 if kernel_set.fused_grad_accumulation else 2.0
    linears, batch = _linear_shapes(shape, shard)
    forward: list[Kernel] = []
    backward: list[Kernel] = []
    for name, m, n, k in linears:
        b = batch if name.startswith("expert") else 1
        gd = "bf16" if name == "router" else dtype
        ib = 2.0 if name == "router" else in_bytes
        forward.append(gemm_kernel(name, "gemm", GemmShape(m, n, k, b, ib, 2.0), gd))
        backward.append(gemm_kernel(name + "-dgrad", "gemm", GemmShape(m, k, n, b, ib, 2.0), gd))
        backward.append(gemm_kernel(name + "-wgrad", "gemm", GemmShape(k, n, m, b, ib, grad_out),
                                    gd))  # fmt: skip

    d = shape.hidden // shape.heads
    heads, kv = shape.heads // shard.tp, max(1, shape.kv_head_count // shard.tp)
    if kernel_set.flash_attention:
        fwd, bwd = flash_kernels(shard.micro_batch, shard.seq_local, shard.seq_kv, heads, kv, d)
        attention_fwd, attention_bwd = (fwd,), (bwd,)
    else:
        attention_fwd, attention_bwd = unfused_kernels(
            shard.micro_batch, shard.seq_local, shard.seq_kv, heads, d
        )
    elements = _elements(shape, shard)
    ops = kernel_set.llama_ops if shape.gated_mlp else kernel_set.gpt_ops
    scores = tuple(op for op in ops if op.elements == "scores")
    attention_fwd = (
        *attention_fwd,
        *(_as_attention(k) for k in _elementwise(scores, elements, False)),
    )
    attention_bwd = (
        *attention_bwd,
        *(_as_attention(k) for k in _elementwise(scores, elements, True)),
    )
    others = tuple(op for op in ops if op.elements != "scores")
    forward += [*attention_fwd, *_elementwise(others, elements, False)]
    backward += [*attention_bwd, *_elementwise(others, elements, True)]

    if shape.experts > 1:  # token permutation and un-permutation (read + write each)
        routed = shard.tokens * shape.top_k * shape.hidden * 2.0
        forward.append(memory_kernel("moe-permute", 4 * routed, launches=2))
        backward.append(memory_kernel("moe-permute-grad", 4 * routed, launches=2))
    if not kernel_set.fused_grad_accumulation:  # main_grad += grad: read 2 + 4, write 4
        params = sum(
            n * k * (batch if name.startswith("expert") else 1) for name, _, n, k in linears
        )
        backward.append(memory_kernel("grad-accumulate", 10.0 * params, launches=len(linears)))
    if dtype == "fp8":
        forward += _fp8_forward(linears, elements)
        backward += _fp8_backward(linears, batch)
    return LayerKernels(tuple(forward), tuple(backward), tuple(attention_fwd))


def _as_attention(kernel: Kernel) -> Kernel:
    return Kernel(kernel.name, "attention", kernel.flops, kernel.bytes, launches=kernel.launches)


def _fp8_forward(
    linears: list[tuple[str, int, int, int]], elements: dict[str, float]
) -> list[Kernel]:
    # The attention output and the MLP activation need their own cast-transpose (2 + 1 + 1);
    # the qkv and MLP-in inputs come out of the fused norm already in fp8.
    casts = 4.0 * (elements["ctx"] + elements["f"])
    return [memory_kernel("fp8-cast-transpose", casts, launches=2),
            memory_kernel("fp8-amax-scale", 0.0, launches=len(linears))]  # fmt: skip


def _fp8_backward(linears: list[tuple[str, int, int, int]], experts: int) -> list[Kernel]:
    # every output gradient, cast-transposed (the router stays in bf16)
    grads = sum(
        4.0 * m * n * (experts if name.startswith("expert") else 1)
        for name, m, n, _ in linears
        if name != "router"
    )
    return [memory_kernel("fp8-grad-cast-transpose", grads, launches=len(linears)),
            memory_kernel("fp8-amax-scale", 0.0, launches=len(linears))]  # fmt: skip


def weight_cast_bytes(shape: TransformerShape, shard: LayerShard, precision: str) -> float:
    """Bytes of casting one layer's local weights to fp8 (+ transpose), once per step."""
    if linear_gemm_dtype(precision) != "fp8":
        return 0.0
    linears, experts = _linear_shapes(shape, shard)
    total = 0.0
    for name, _, n, k in linears:
        if name != "router":
            total += n * k * (experts if name.startswith("expert") else 1)
    return 4.0 * total
