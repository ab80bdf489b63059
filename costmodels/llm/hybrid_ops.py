"""The kernels of one layer of a hybrid Mamba-2 / attention / MLP model (issue 39: Nemotron-H,
Nemotron 3) on one GPU, per micro-batch, as costmodels/llm/layer_ops.py builds a transformer
layer's.

A hybrid layer is one norm, one mixer and one residual add (Megatron's hybrid_override_pattern:
M a Mamba-2 mixer, * attention, - a dense MLP, E a MoE MLP). Attention and MLP layers are the
matching half of a transformer layer: its attention (or MLP) GEMMs, attention core, element-wise
ops and MoE permutation, with the norm and residual ops (two per transformer layer) halved; the
per-weight casts and gradient accumulation follow each side's GEMMs.

A Mamba-2 layer (costmodels/llm/mamba.py; heads and groups split over TP as Megatron's
MambaMixer does):

* GEMMs in_proj (T x (2 d + 2 G N + H) / t x h) and out_proj (T x h x d / t), each with its
  dgrad and wgrad, at the precision's GEMM rate (fp8 / fp4 like the other linear layers; their
  cast kernels are not added: an approximation);
* the depthwise causal conv1d with SiLU: a memory-bound pass reading and writing conv_dim / t
  channels per token (forward 4 bytes per element, backward 8);
* the SSD chunked scan as its four batched products (mamba.ssd_gemms; backward: two products of
  the same size per forward one) in the ``attention`` bucket (the sequence mixer), timed by the
  GEMM model (small per-chunk matrices run below the large-GEMM rate), plus the state passing
  between chunks (fp32 H P N states per chunk, read and written; backward twice) and the
  cumulative decay sums, memory-bound;
* the gated RMSNorm (reads y and z, writes 2 bytes: 6 per element; backward 10).

Under fp8 the per-step weight casts and TE's fp8 weight copies of a hybrid layer follow its own
GEMMs' weights (``fp8_weights``: in_proj and out_proj for a Mamba-2 layer).
"""

from __future__ import annotations

from dataclasses import replace

from costmodels.llm.frameworks import KernelSet
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.layer_kinds import LayerCounts
from costmodels.llm.layer_ops import LayerKernels, LayerShard, layer_kernels
from costmodels.llm.linear_shapes import (
    attention_linears,
    layer_linears,
    local_weights,
    mlp_linears,
)
from costmodels.llm.mamba import check_tp, ssd_gemms
from costmodels.llm.precision import linear_gemm_dtype
from costmodels.llm.shapes import TransformerShape

_ATTENTION_GEMMS = ("qkv", "q", "q-a", "q-b", "kv-a", "kv-b", "attention-out")
_MLP_GEMMS = ("mlp-in", "mlp-out", "expert-in", "expert-out", "router", "shared-expert-in",
              "shared-expert-out", "moe-permute", "latent-in", "latent-out")  # fmt: skip
_SHARED = ("grad-accumulate", "fp8-cast-transpose", "fp8-grad-cast-transpose", "fp8-amax-scale",
           "sequence-dim-copies")  # fmt: skip


def _base(name: str) -> str:
    for suffix in ("-dgrad", "-wgrad", "-grad"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _side(kernel: Kernel, kernel_set: KernelSet) -> str:
    """Which half of a transformer layer a kernel belongs to: attention, mlp or both (h)."""
    name = _base(kernel.name)
    if name in _ATTENTION_GEMMS or kernel.category == "attention":
        return "attention"
    if name in _MLP_GEMMS:
        return "mlp"
    if name in _SHARED:
        return "h"
    for op in (*kernel_set.gpt_ops, *kernel_set.llama_ops):
        if op.name == name:
            return {"f": "mlp", "h": "h"}.get(op.elements, "attention")
    return "h"


def _halved(kernel: Kernel) -> Kernel:
    launches = max(1, kernel.launches // 2)
    return replace(kernel, flops=kernel.flops / 2, bytes=kernel.bytes / 2, launches=launches)


def _keep(kernels: tuple[Kernel, ...], side: str, kernel_set: KernelSet) -> tuple[Kernel, ...]:
    out = []
    for k in kernels:
        where = _side(k, kernel_set)
        if where == side:
            out.append(k)
        elif where == "h":
            out.append(_halved(k))
    return tuple(out)


def _mamba(shape: TransformerShape, shard: LayerShard, precision: str,
           shared: LayerKernels) -> LayerKernels:  # fmt: skip
    m = shape.mamba
    assert m is not None  # a hybrid pattern with M layers holds one
    t, tokens, h = shard.tp, shard.tokens, shape.hidden
    check_tp(m, t)
    dtype = linear_gemm_dtype(precision)
    dtype = dtype if dtype in ("bf16", "fp16", "fp8", "fp4") else "bf16"
    ib = {"fp8": 1.0, "fp4": 0.5 + 1 / 16}.get(dtype, 2.0)
    forward: list[Kernel] = []
    backward: list[Kernel] = []
    for name, n, k in (("mamba-in-proj", m.in_proj_width // t, h),
                       ("mamba-out-proj", h, m.inner // t)):  # fmt: skip
        forward.append(gemm_kernel(name, "gemm", GemmShape(tokens, n, k, 1, ib), dtype))
        backward.append(gemm_kernel(name + "-dgrad", "gemm", GemmShape(tokens, k, n, 1, ib), dtype))
        backward.append(gemm_kernel(name + "-wgrad", "gemm",
                                    GemmShape(k, n, tokens, 1, ib, 4.0), dtype))  # fmt: skip
    conv = tokens * m.conv_dim / t
    forward.append(memory_kernel("mamba-conv1d-silu", 4.0 * conv))
    backward.append(memory_kernel("mamba-conv1d-silu-grad", 8.0 * conv, launches=2))
    for g in ssd_gemms(m, shard.micro_batch, shard.seq_local, t):
        fwd = GemmShape(g.m, g.n, g.k, g.batch)
        forward.append(gemm_kernel(g.name, "attention", fwd, "bf16"))
        backward.append(gemm_kernel(g.name + "-grad-a", "attention",
                                    GemmShape(g.m, g.k, g.n, g.batch), "bf16"))  # fmt: skip
        backward.append(gemm_kernel(g.name + "-grad-b", "attention",
                                    GemmShape(g.k, g.n, g.m, g.batch), "bf16"))  # fmt: skip
    chunks = shard.micro_batch * -(-shard.seq_local // m.chunk)
    states = 8.0 * chunks * m.heads * m.head_dim * m.state / t  # fp32, read + write
    decay = 8.0 * tokens * m.heads / t  # dt softplus and the cumulative sums (fp32)
    forward.append(memory_kernel("ssd-state-passing", states + decay, launches=2))
    backward.append(memory_kernel("ssd-state-passing-grad", 2 * (states + decay), launches=3))
    y = tokens * m.inner / t
    forward.append(memory_kernel("mamba-gated-norm", 6.0 * y))
    backward.append(memory_kernel("mamba-gated-norm-grad", 10.0 * y, launches=2))
    return LayerKernels((*shared.forward, *forward), (*shared.backward, *backward), ())


def block_kernels(shape: TransformerShape, shard: LayerShard, precision: str,
                  kernel_set: KernelSet, kind: str, fp8_recipe: str | None = None,
                  weight_shards: int = 1) -> LayerKernels:  # fmt: skip
    """Forward and backward kernels of one hybrid layer of ``kind`` (module docstring)."""
    full = layer_kernels(shape, shard, precision, kernel_set, kind == "E", fp8_recipe,
                         weight_shards)  # fmt: skip
    if kind == "M":
        shared = LayerKernels(_keep(full.forward, "h-only", kernel_set),
                              _keep(full.backward, "h-only", kernel_set), ())  # fmt: skip
        shared = LayerKernels(tuple(k for k in shared.forward if not k.name.startswith("fp8")
                                    and k.name != "grad-accumulate"),
                              tuple(k for k in shared.backward if not k.name.startswith("fp8")
                                    and k.name != "grad-accumulate"), ())  # fmt: skip
        return _mamba(shape, shard, precision, shared)
    side = "attention" if kind == "*" else "mlp"
    attention = full.attention_forward if kind == "*" else ()
    return LayerKernels(_keep(full.forward, side, kernel_set),
                        _keep(full.backward, side, kernel_set), attention)  # fmt: skip


def fp8_weights(shape: TransformerShape, kind: str, tp: int, ep: int = 1, etp: int = 0) -> float:
    """Weight elements of one hybrid layer's GEMMs that run in fp8 on one GPU (the router does
    not): a Mamba-2 layer's in_proj and out_proj, attention's or an MLP's linears."""
    if kind == "M":
        m = shape.mamba
        assert m is not None  # a hybrid pattern with M layers holds one
        return float(shape.hidden * (m.in_proj_width + m.inner) // tp)
    if kind == "*":
        return local_weights([x for x in attention_linears(shape, 1, tp) if x.fp8])
    linears = mlp_linears(shape, 1, tp, ep, kind == "E", etp)
    return local_weights([x for x in linears if x.fp8])


def dense_layers_equivalent(shape: TransformerShape, counts: tuple[LayerCounts, ...], tp: int,
                            ep: int = 1, etp: int = 0) -> float:  # fmt: skip
    """The busiest stage's fp8 weights in dense transformer layers' worth (what a per-layer
    weight cast or fp8 weight copy is multiplied by for a hybrid model)."""
    full = local_weights([x for x in layer_linears(shape, 1, tp, ep, False, etp) if x.fp8])
    most = max(sum(n * fp8_weights(shape, str(kind), tp, ep, etp) for kind, n in c.items())
               for c in counts)  # fmt: skip
    return most / full
