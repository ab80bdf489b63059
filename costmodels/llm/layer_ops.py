"""Every kernel of one transformer layer's forward and backward pass on one GPU, per micro-batch.

The GEMMs come from costmodels/llm/linear_shapes.py (Megatron-style sharding; MLA, MoE with
shared experts, dense layers of a MoE model), so a GPT layer (f = 4h, full attention) does
24 T h^2 / t GEMM FLOPs forward and twice that backward, as in Narayanan et al. SC'21. The
attention core is costmodels/llm/attention.py; the element-wise ops come from the framework's
fusion set (costmodels/llm/frameworks.py).

MoE layers add the token permutation and its inverse (read + write of T top_k h, twice each
way) around the grouped expert GEMMs. Megatron-Core's dispatcher, where a GPU holds more than
one expert, also regroups the received tokens by local expert after the exchange and restores
their order before the combine ("Permutation 2": ``sort_chunks_by_idxs``, or with capacity
padding a view/transpose copy, in ``MoEAlltoAllTokenDispatcher``), a read + write of the rows
the GPU's experts run, each way, forward and backward (issue 39, the Grok-1 DGX Cloud runs).

FP8 (costmodels/llm/fp8_recipes.py): the linear layers' GEMMs (not the router) take fp8 inputs;
each recipe adds its casts: inputs that a fused norm does not cast, every output gradient, and
under dynamic scaling (tensorwise, rowwise) the weights every forward and the transposed
re-casts of the saved inputs and the weights in the backward; delayed and blockwise scaling
cast the weights (and their transposes) once per optimizer step (``weight_cast_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costmodels.llm.attention import flash_kernels, unfused_kernels
from costmodels.llm.fp8_recipes import NVFP4, Fp8Recipe, cast_bytes, get_recipe
from costmodels.llm.frameworks import ElementwiseOp, KernelSet
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.layer_kinds import dense_ffn, head_dim, is_moe, sliding_share
from costmodels.llm.linear_shapes import Linear, layer_linears, local_kv_heads, local_weights
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
    etp: int = 0  # the experts' TP degree (issue 39; 0: tp)
    moe_load: float = 0.0  # busiest EP rank's routed tokens / mean (0: the chance spread)
    flash_version: int = 0  # FlashAttention generation (issue 39, recipe.py; 0: the framework's)

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq_local


@dataclass(frozen=True)
class LayerKernels:
    forward: tuple[Kernel, ...]
    backward: tuple[Kernel, ...]
    attention_forward: tuple[Kernel, ...]  # what selective recomputation re-runs


def _elements(shape: TransformerShape, shard: LayerShard, moe: bool) -> dict[str, float]:
    t, tokens = shard.tp, shard.tokens
    heads, kv = shape.heads // t, local_kv_heads(shape, t)
    norm_tokens = tokens / t if shard.sequence_parallel else tokens
    if moe:
        f = tokens * shape.ffn_size / t * (shape.top_k + shape.shared_experts)
    else:
        f = tokens * dense_ffn(shape) / t
    m = shape.mla
    if m is not None:
        qk = tokens * (heads + 1) * m.qk_rope_head_dim  # rotary on the decoupled key parts
        ctx = tokens * heads * m.v_head_dim
    else:
        qk = tokens * (heads + kv) * head_dim(shape)
        ctx = tokens * heads * head_dim(shape)
    return {
        "h": norm_tokens * shape.hidden,
        "f": f,
        "qk": qk,
        "ctx": ctx,
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


def _attention(shape: TransformerShape, shard: LayerShard, kernel_set: KernelSet,
               attention_kernel: str | None = None):  # fmt: skip
    """The attention core's kernels; flash passes tagged with the framework's flash generation
    and the kernel the recipe names (costmodels/llm/attention_rates.py prices them)."""
    fwd, bwd = _attention_kernels(shape, shard, kernel_set)
    # the flash generation: the recipe's (issue 39: Grok-1's NVTE_FUSED_ATTN=0 runs FA2), else the
    # framework's; a named implementation (issue 36) is priced at its published rate
    version = shard.flash_version or kernel_set.flash_version
    tags = {"flash_version": version, "attention_kernel": attention_kernel or ""}
    fwd = tuple(replace(k, **tags) if k.flash else k for k in fwd)
    bwd = tuple(replace(k, **tags) if k.flash else k for k in bwd)
    return fwd, bwd


def _attention_kernels(shape: TransformerShape, shard: LayerShard, kernel_set: KernelSet):
    heads, kv = shape.heads // shard.tp, local_kv_heads(shape, shard.tp)
    b, sq, sk = shard.micro_batch, shard.seq_local, shard.seq_kv
    m = shape.mla
    if m is not None:  # expanded heads: query/key width nope + rope, value width v
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if not kernel_set.flash_attention:
            return unfused_kernels(b, sq, sk, heads, (qk + m.v_head_dim) // 2)
        fwd, bwd = flash_kernels(b, sq, sk, heads, heads, qk, d_v=m.v_head_dim)
        return (fwd,), (bwd,)
    if kernel_set.flash_attention:
        fwd, bwd = flash_kernels(b, sq, sk, heads, kv, head_dim(shape))
        share = sliding_share(shape)
        if share:  # issue 39: sliding-window layers score a band of w keys per query
            w = min(shape.sliding_window, sk)
            band_f, band_b = flash_kernels(b, sq, w, heads, kv, head_dim(shape), causal=False)
            fwd, bwd = (_mixed(full, band, share) for full, band in ((fwd, band_f), (bwd, band_b)))
        return (fwd,), (bwd,)
    return unfused_kernels(b, sq, sk, heads, head_dim(shape))


def _mixed(full: Kernel, band: Kernel, share: float) -> Kernel:
    """One layer's attention kernel averaged over full and sliding-window layers (``share`` of
    them windowed): the per-layer mean of their FLOPs and bytes, summed right over the model."""
    return replace(full, flops=(1 - share) * full.flops + share * band.flops,
                   bytes=(1 - share) * full.bytes + share * band.bytes)  # fmt: skip


def _gemm_dtype(precision: str, recipe: Fp8Recipe | None, linear: Linear) -> str:
    dtype = linear_gemm_dtype(precision)
    if dtype not in ("fp8", "fp4") or not linear.fp8:
        return "bf16" if dtype in ("fp8", "fp4") else dtype
    if dtype == "fp4":
        return "fp4"
    return "fp8" if recipe is None or recipe.name in ("delayed", "tensorwise", "fp8-cs") else \
        f"fp8-{recipe.name}"  # fmt: skip


def _low_precision_recipe(precision: str, fp8_recipe: str | None,
                          framework: str) -> Fp8Recipe | None:  # fmt: skip
    """The cast recipe of an fp8 (``--fp8-recipe``) or fp4 (NVFP4) step, None otherwise."""
    dtype = linear_gemm_dtype(precision)
    if dtype == "fp4":
        return NVFP4
    return get_recipe(fp8_recipe, framework) if dtype == "fp8" else None


_INPUT_BYTES = {"fp4": 0.5 + 1 / 16}  # E2M1 and an E4M3 scale per 16 (fp8: 1, else 2)


def layer_kernels(
    shape: TransformerShape,
    shard: LayerShard,
    precision: str,
    kernel_set: KernelSet,
    moe: bool | None = None,
    fp8_recipe: str | None = None,
    weight_shards: int = 1,
    attention_kernel: str | None = None,
) -> LayerKernels:
    """Forward and backward kernels of one layer for one micro-batch on one GPU: a MoE layer
    when ``moe`` (default: whether the model has experts), else a dense one. ``weight_shards``:
    with FSDP's float8 all-gather (torchao ``enable_fsdp_float8_all_gather``) a dynamic recipe
    casts each weight on its shard before the gather, so the forward weight cast is split over
    the ``weight_shards`` ranks that hold it (dp x cp), and the backward transposes the gathered
    fp8 weight (``FP8_TRANSPOSE_BYTES``) instead of re-casting it; 1 when the gathered bf16
    weight is cast."""
    moe = is_moe(shape) if moe is None else moe
    recipe = _low_precision_recipe(precision, fp8_recipe, kernel_set.name)
    grad_out = 4.0 if kernel_set.fused_grad_accumulation else 2.0
    linears = layer_linears(shape, shard.tokens, shard.tp, shard.ep, moe, shard.etp,
                            shard.moe_load)
    forward: list[Kernel] = []
    backward: list[Kernel] = []
    for x in linears:
        dtype = _gemm_dtype(precision, recipe, x)
        ib = _INPUT_BYTES.get(dtype, 1.0 if dtype.startswith("fp8") else 2.0)
        forward.append(gemm_kernel(x.name, "gemm", GemmShape(x.m, x.n, x.k, x.batch, ib), dtype))
        backward.append(gemm_kernel(x.name + "-dgrad", "gemm",
                                    GemmShape(x.m, x.k, x.n, x.batch, ib), dtype))  # fmt: skip
        backward.append(
            gemm_kernel(
                x.name + "-wgrad", "gemm", GemmShape(x.k, x.n, x.m, x.batch, ib, grad_out), dtype
            )
        )

    attention_fwd, attention_bwd = _attention(shape, shard, kernel_set, attention_kernel)
    elements = _elements(shape, shard, moe)
    ops = kernel_set.llama_ops if shape.gated_mlp else kernel_set.gpt_ops
    scores = tuple(op for op in ops if op.elements == "scores")
    attention_fwd = (
        *attention_fwd,
        *(_as_attention(k) for k in _elementwise(scores, elements, False)),
    )
    attention_bwd = (*attention_bwd,
                     *(_as_attention(k) for k in _elementwise(scores, elements, True)))  # fmt: skip
    others = tuple(op for op in ops if op.elements != "scores")
    forward += [*attention_fwd, *_elementwise(others, elements, False)]
    backward += [*attention_bwd, *_elementwise(others, elements, True)]

    if kernel_set.sequence_dim_copy_bytes and shard.sequence_parallel and shard.tp > 1:
        copies = kernel_set.sequence_dim_copy_bytes * shard.tokens * shape.hidden
        forward.append(memory_kernel("sequence-dim-copies", copies, launches=4))
        backward.append(memory_kernel("sequence-dim-copies-grad", copies, launches=4))
    if moe:  # token permutation and un-permutation (read + write each)
        routed = shard.tokens * shape.top_k * shape.expert_width * 2.0  # latent if LatentMoE
        forward.append(memory_kernel("moe-permute", 4 * routed, launches=2))
        backward.append(memory_kernel("moe-permute-grad", 4 * routed, launches=2))
        experts = next(x for x in linears if x.name == "expert-in")
        if kernel_set.name == "megatron" and experts.batch > 1:  # "Permutation 2" (docstring)
            held = 4.0 * experts.m * experts.batch * shape.expert_width  # bf16 read + write
            forward.append(memory_kernel("moe-sort-chunks", 2 * held, launches=2))
            backward.append(memory_kernel("moe-sort-chunks-grad", 2 * held, launches=2))
    if not kernel_set.fused_grad_accumulation:  # main_grad += grad: read 2 + 4, write 4
        backward.append(memory_kernel("grad-accumulate", 10.0 * local_weights(linears),
                                      launches=len(linears)))  # fmt: skip
    if recipe is not None:
        compiled = kernel_set.name == "pytorch-compile"
        forward += _fp8_forward(linears, elements, recipe, compiled, weight_shards)
        backward += _fp8_backward(linears, recipe, compiled, weight_shards)
    return LayerKernels(tuple(forward), tuple(backward), tuple(attention_fwd))


def _as_attention(kernel: Kernel) -> Kernel:
    return Kernel(kernel.name, "attention", kernel.flops, kernel.bytes, launches=kernel.launches)


FP8_TRANSPOSE_BYTES = 2.0  # a 1-byte tensor read and written transposed
_NORM_FED = ("qkv", "q", "q-a", "kv-a", "mlp-in")  # inputs that come out of a norm kernel
# A MoE layer's norm is a kernel of its own (Megatron-Core's MoE layer spec: pre_mlp_layernorm
# = TENorm, the router needs its bf16 output), so the experts' first GEMMs (TE Linear, not
# LayerNormLinear) cast the permuted tokens themselves (issue 39)
_EXPERT_FED = ("expert-in", "shared-expert-in", "latent-in", "latent-out")


def _fp8_forward(linears: list[Linear], elements: dict[str, float], recipe: Fp8Recipe,
                 compiled: bool, weight_shards: int = 1) -> list[Kernel]:  # fmt: skip
    fp8 = [x for x in linears if x.fp8]
    fed = sum(x.m * x.k * x.batch for x in fp8 if x.name in _NORM_FED)
    other = sum(x.m * x.k * x.batch for x in fp8 if x.name not in _NORM_FED)
    casts = cast_bytes(recipe, "input_cast_bytes", compiled) * other
    casts += cast_bytes(recipe, "fused_input_cast_bytes", compiled) * fed
    if recipe.weight_cast_per_microbatch:  # dynamic scaling: weights cast every forward
        casts += (cast_bytes(recipe, "weight_cast_bytes", compiled) * local_weights(fp8)
                  / max(1, weight_shards))  # fmt: skip
    if recipe.name == "delayed":  # the kernels the delayed-scaling path always ran
        casts = 4.0 * (elements["ctx"] + elements["f"] + sum(
            x.m * x.k * x.batch for x in fp8 if x.name in _EXPERT_FED))  # fmt: skip
    return [memory_kernel("fp8-cast-transpose", casts, launches=2 * recipe.extra_launches),
            memory_kernel("fp8-amax-scale", 0.0, launches=len(linears))]  # fmt: skip


def _fp8_backward(linears: list[Linear], recipe: Fp8Recipe, compiled: bool,
                  weight_shards: int = 1) -> list[Kernel]:  # fmt: skip
    fp8 = [x for x in linears if x.fp8]
    grads = cast_bytes(recipe, "grad_cast_bytes", compiled) * sum(x.m * x.n * x.batch for x in fp8)
    if recipe.weight_cast_per_microbatch:  # transposed re-casts of saved inputs and weights
        grads += cast_bytes(recipe, "saved_input_recast_bytes", compiled) * sum(
            x.m * x.k * x.batch for x in fp8)  # fmt: skip
        weight = cast_bytes(recipe, "weight_cast_bytes", compiled)
        if weight_shards > 1:  # float8 gathered: re-cast on the shard, transpose the fp8 copy
            weight = weight / weight_shards + FP8_TRANSPOSE_BYTES
        grads += weight * local_weights(fp8)
    return [
        memory_kernel("fp8-grad-cast-transpose", grads, launches=len(linears)),
        memory_kernel("fp8-amax-scale", 0.0, launches=len(linears) * recipe.extra_launches),
    ]


def weight_cast_bytes(shape: TransformerShape, shard: LayerShard, precision: str,
                      moe: bool | None = None, fp8_recipe: str | None = None,
                      framework: str = "megatron") -> float:  # fmt: skip
    """Bytes of casting one layer's local weights to fp8 (+ transpose) once per step: the
    recipes with per-step weight scales (delayed, blockwise); dynamic recipes cast per forward
    (in ``layer_kernels``)."""
    recipe = _low_precision_recipe(precision, fp8_recipe, framework)
    if recipe is None or recipe.weight_cast_per_microbatch:
        return 0.0
    moe = is_moe(shape) if moe is None else moe
    linears = layer_linears(shape, shard.tokens, shard.tp, shard.ep, moe, shard.etp,
                            shard.moe_load)
    return recipe.weight_cast_bytes * local_weights([x for x in linears if x.fp8])
