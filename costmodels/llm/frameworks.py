"""Which kernels a training framework runs around the GEMMs: four named, sourced fusion sets.

A transformer layer's element-wise and reduction work (norms, activations, rotary embedding,
dropout, residual adds) costs HBM traffic and kernel launches, and how much depends on what the
framework fuses. Each set below lists, per op and layer, how many kernels run and how many bytes
each element of the op's tensor moves (reads + writes) forward and backward. The byte counts
are our reading of each implementation's kernels (16-bit activations = 2 bytes, fp32 = 4, a
dropout mask = 1); they are hand counts, not measurements.

- ``megatron-legacy``: Megatron-LM as in Narayanan et al. SC'21 (arXiv:2104.04473, §4.2: fused
  "bias + GeLU", "bias + dropout + add" and "scale + mask + softmax" kernels) and
  Megatron-DeepSpeed (the vTrain runs, arXiv:2312.12391): apex fused LayerNorm, attention
  *not* fused: QK^T and attention-over-values are batched GEMMs over the full s x s score
  matrix, with the fused softmax and a separate attention-dropout kernel; weight gradients are
  accumulated into fp32 ``main_grad`` buffers by a separate add; gradients are all-reduced
  after the backward pass (no overlap).
- ``megatron``: Megatron-Core with Transformer Engine: fused (flash / cuDNN) attention, TE
  LayerNorm/RMSNorm fused with the following linear layer's input cast, fused bias-SwiGLU /
  bias-GeLU, fused rotary embedding, gradient-accumulation fusion (the weight-gradient GEMM adds
  into the fp32 buffer), gradients reduced in fp32 for bf16 (Megatron-LM sets
  ``accumulate_allreduce_grads_in_fp32`` for bf16) and overlapped with the backward pass
  (``--overlap-grad-reduce``).
- ``pytorch``: eager PyTorch as torchtitan runs it without compile: ``scaled_dot_product_
  attention`` (flash), RMSNorm and rotary embedding as chains of element-wise ops, SwiGLU as
  ``silu`` then ``mul``, cross-entropy on fp32 logits, FSDP2/DDP reducing gradients in fp32
  (torchtitan ``mixed_precision_reduce = "float32"``) overlapped with the backward, fused AdamW.
- ``pytorch-compile``: the same with ``torch.compile`` per transformer block: Inductor fuses the
  element-wise and reduction ops between two GEMM/attention calls into one kernel (two in the
  backward when a reduction feeds a weight gradient), so each region reads its inputs and
  writes its outputs once.

Sequence parallelism in torchtitan shards activations of shape [batch, sequence, hidden] along
dim 1 (DTensor ``Shard(1)``), while NCCL gathers and scatters along dim 0: functional
collectives then copy every gathered output into place (``torch.cat`` of the chunks) and every
reduce-scatter input out of place (chunks re-stacked along dim 0). Per layer and pass that is
two all-gathers and two reduce-scatters, each copying the full tensor (read + write, 2 x 2
bytes per element of tokens x hidden): ``sequence_dim_copy_bytes`` = 16 per token-hidden
element. Megatron keeps [sequence, batch, hidden] and gathers along dim 0, so it has none.

Two more names run one of these kernel sets with a data-parallel engine of their own
(costmodels/llm/framework_dp.py): ``deepspeed`` (DeepSpeed ZeRO around eager PyTorch kernels)
and ``megatron-fsdp`` (Megatron-Core's FSDP around Megatron-Core's kernels).

Element symbols: ``h`` = tokens x hidden of the norm/residual path (tokens / tp under sequence
parallelism), ``f`` = tokens x ffn / tp, ``qk`` = tokens x (q + k width) / tp, ``ctx`` = tokens
x hidden / tp (attention output), ``scores`` = micro-batch x heads / tp x s x s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Framework = Literal["megatron", "megatron-legacy", "pytorch", "pytorch-compile", "megatron-fsdp",
                    "deepspeed"]
FRAMEWORKS_ORDER: tuple[str, ...] = ("megatron", "megatron-legacy", "pytorch", "pytorch-compile",
                                     "megatron-fsdp", "deepspeed")
# framework -> the kernel set it runs (costmodels/llm/framework_dp.py prices the rest)
KERNELS_OF: dict[str, str] = {"megatron-fsdp": "megatron", "deepspeed": "pytorch"}


def kernel_framework(framework: str) -> str:
    """The kernel set's name a framework runs (itself for the four kernel sets)."""
    return KERNELS_OF.get(framework, framework)


@dataclass(frozen=True)
class ElementwiseOp:
    """One memory-bound op of a layer: ``count`` times per layer on ``elements``."""

    name: str
    elements: Literal["h", "f", "qk", "ctx", "scores"]
    count: int
    fwd_kernels: int
    fwd_bytes: float  # bytes moved per element (reads + writes)
    bwd_kernels: int
    bwd_bytes: float


@dataclass(frozen=True)
class KernelSet:
    """A framework's fusion choices and the bytes of its loss and optimizer."""

    name: str
    flash_attention: bool
    gpt_ops: tuple[ElementwiseOp, ...]  # LayerNorm, GeLU, dropout 0.1 (GPT-2/3 style)
    llama_ops: tuple[ElementwiseOp, ...]  # RMSNorm, SwiGLU, rotary, no dropout (Llama style)
    fused_grad_accumulation: bool  # weight-gradient GEMM adds into fp32 main grads
    loss_fwd: tuple[int, float]  # (kernels, bytes per logit element) of cross-entropy forward
    loss_bwd: tuple[int, float]
    optimizer_bytes_per_param: float  # clip/Adam/copy-back, bytes per parameter (bf16)
    optimizer_passes: int  # multi-tensor passes over the parameters (kernel launches)
    overlap_dp: bool  # gradient reduction overlapped with the backward pass
    grad_reduce_bytes_bf16: int  # bytes per gradient element on the wire for bf16 training
    sequence_dim_copy_bytes: float = 0.0  # per token x hidden and layer pass with TP + SP
    # FlashAttention generation on Hopper: Megatron-Core/TE runs cuDNN / FA3-class kernels,
    # PyTorch's SDPA flash backend FlashAttention-2 ("FlashAttention-2 achieving only 35%
    # utilization on the H100 GPU", Shah et al., FlashAttention-3, arXiv:2407.08608, abstract)
    flash_version: int = 3
    # q/k/v and gate/up are separate linear modules (torchtitan's Llama: wq, wk, wv, w1, w3), so
    # the input gradient is a sum of dgrads (costmodels/llm/tp_schedule.py)
    separate_projections: bool = False
    # float8 tensorwise TP all-gathers 1-byte elements (torchao Float8ColwiseParallel)
    fp8_tp_gather: bool = False


def _op(name, elements, count, fk, fb, bk, bb) -> ElementwiseOp:  # noqa: ANN001 - table rows
    return ElementwiseOp(name, elements, count, fk, fb, bk, bb)


# Shared rows. LayerNorm (apex/TE/ATen): one kernel reading x and writing y (2 + 2); backward
# reads x and dy, writes dx (6) in two kernels (input grad, weight/bias grad partial sums).
_LAYERNORM = _op("layernorm", "h", 2, 1, 4, 2, 6)
_RMSNORM_FUSED = _op("rmsnorm", "h", 2, 1, 4, 2, 6)  # same traffic as the fused LayerNorm
# Residual branch end: fused bias + dropout + add writes the sum and a 1-byte mask (2+2+2+1);
# backward: dropout grad (2 + 1 + 2) and the residual-gradient sum at the fork (2 + 2 + 2).
_BIAS_DROPOUT_ADD = _op("bias-dropout-add", "h", 2, 1, 7, 2, 11)
_ADD = _op("residual-add", "h", 2, 1, 6, 1, 6)  # no dropout: sum forward, gradient sum backward
_BIAS_GELU = _op("bias-gelu", "f", 1, 1, 4, 2, 8)  # backward: dgelu (2+2+2) + bias grad (2)
_SWIGLU_FUSED = _op("swiglu", "f", 1, 1, 6, 1, 10)  # reads gate and up (4), writes 2; bwd 4+2+4
_ROPE_FUSED = _op("rotary", "qk", 1, 1, 4, 1, 4)
_CTX_COPY = _op("attention-output-transpose", "ctx", 1, 1, 4, 1, 4)

_LEGACY_ATTENTION = (
    _op("scale-mask-softmax", "scores", 1, 1, 4, 1, 6),  # fused; bwd reads P and dP, writes dS
    _op("attention-dropout", "scores", 1, 1, 5, 1, 5),  # writes probs and a 1-byte mask
    _CTX_COPY,  # [b*np, s, hn] -> [s, b, h] before the output projection
)
_BIAS_GRADS = _op("bias-grads", "h", 4, 0, 0, 1, 3)  # column sums of 4 output grads (~1.5 h each)

KERNEL_SETS: dict[str, KernelSet] = {
    "megatron-legacy": KernelSet(
        name="megatron-legacy",
        flash_attention=False,
        gpt_ops=(_LAYERNORM, _BIAS_DROPOUT_ADD, _BIAS_GELU, _BIAS_GRADS, *_LEGACY_ATTENTION),
        llama_ops=(_RMSNORM_FUSED, _ADD, _SWIGLU_FUSED, _ROPE_FUSED, *_LEGACY_ATTENTION),
        fused_grad_accumulation=False,
        # vocab-parallel cross-entropy on fp32 logits: cast (2+4), max (4), subtract (8),
        # exp (8), sum (4), normalise (8); backward: scale softmax by the loss grad (8), cast (6)
        loss_fwd=(6, 38.0),
        loss_bwd=(2, 14.0),
        # grad norm (4), clip (8), fused Adam (16 read + 12 write), fp32 -> 16-bit parameter
        # copy (6), zero the fp32 and 16-bit grads (6); fp16 adds LOSS_SCALE_BYTES
        optimizer_bytes_per_param=52.0,
        optimizer_passes=6,
        overlap_dp=False,
        grad_reduce_bytes_bf16=2,
    ),
    "megatron": KernelSet(
        name="megatron",
        flash_attention=True,
        gpt_ops=(_LAYERNORM, _BIAS_DROPOUT_ADD, _BIAS_GELU),  # TE fuses bias grads into casts
        llama_ops=(_RMSNORM_FUSED, _ADD, _SWIGLU_FUSED, _ROPE_FUSED),
        fused_grad_accumulation=True,
        loss_fwd=(6, 38.0),  # Megatron-Core's default vocab-parallel cross-entropy, as above
        loss_bwd=(2, 14.0),
        optimizer_bytes_per_param=50.0,  # as legacy, zeroing only the fp32 grads (4)
        optimizer_passes=5,
        overlap_dp=True,
        grad_reduce_bytes_bf16=4,
    ),
    "pytorch": KernelSet(
        name="pytorch",
        flash_attention=True,
        gpt_ops=(
            _LAYERNORM,
            _op("dropout", "h", 2, 1, 5, 1, 5),
            _op("residual-add", "h", 2, 1, 6, 1, 6),
            _op("gelu", "f", 1, 1, 4, 1, 6),
            _CTX_COPY,
        ),  # fmt: skip
        llama_ops=(
            # composite RMSNorm: pow (4), mean (2), multiply by rsqrt (4), weight (4); its
            # autograd runs about twice the kernels and traffic
            _op("rmsnorm", "h", 2, 4, 14, 8, 30),
            _op("residual-add", "h", 2, 1, 6, 1, 6),
            # complex-number rotary (torchtitan): fp32 cast (6), complex mul (8), cast back (6)
            _op("rotary", "qk", 1, 3, 20, 3, 20),
            # silu (4) then multiply (6); backward: mul grads (2 x 6) and silu grad (6)
            _op("swiglu", "f", 1, 2, 10, 3, 18),
            _CTX_COPY,
        ),
        fused_grad_accumulation=True,  # autograd accumulates in place into .grad
        # F.cross_entropy(logits.float()): cast (6) and log-softmax (two reads + one write, 12);
        # backward: nll grad fill (4), log-softmax grad (12), cast back (6)
        loss_fwd=(3, 18.0),
        loss_bwd=(3, 22.0),
        # grad norm (4), clip (8), fused AdamW on fp32 shards (28)
        optimizer_bytes_per_param=40.0,
        optimizer_passes=3,
        overlap_dp=True,
        grad_reduce_bytes_bf16=4,
        sequence_dim_copy_bytes=16.0,
        flash_version=2,
        separate_projections=True,
        fp8_tp_gather=True,
    ),
    "pytorch-compile": KernelSet(
        name="pytorch-compile",
        flash_attention=True,
        # one kernel per region: add + dropout + LayerNorm (reads x and the branch, writes the
        # sum, the normed tensor and a mask: 2+2+2+2+1); gelu with its bias in the GEMM
        gpt_ops=(
            _op("add-dropout-layernorm", "h", 2, 1, 9, 2, 13),
            _op("gelu", "f", 1, 1, 4, 1, 6),
        ),
        llama_ops=(
            _op("add-rmsnorm", "h", 2, 1, 8, 2, 12),
            _op("rotary", "qk", 1, 1, 4, 1, 4),
            _op("swiglu", "f", 1, 1, 6, 1, 10),
        ),
        fused_grad_accumulation=True,
        loss_fwd=(2, 6.0),  # compiled loss: online log-softmax over 16-bit logits (2 + 2 + 2)
        loss_bwd=(1, 6.0),
        optimizer_bytes_per_param=40.0,  # the optimizer is not compiled (same as eager)
        optimizer_passes=3,
        overlap_dp=True,
        grad_reduce_bytes_bf16=4,
        sequence_dim_copy_bytes=16.0,  # collectives are not fused by Inductor
        flash_version=2,
        separate_projections=True,
        fp8_tp_gather=True,
    ),
}


# fp16 training adds dynamic loss scaling: unscale the gradients and check them for inf/NaN
# (read 4 + write 4 bytes per parameter), e.g. apex/Megatron ``multi_tensor_scale``.
LOSS_SCALE_BYTES = 8.0


def get_kernel_set(framework: str) -> KernelSet:
    """The fusion set of a framework name (see the module docstring)."""
    try:
        return KERNEL_SETS[kernel_framework(framework)]
    except KeyError:
        raise ValueError(
            f"framework must be one of {list(FRAMEWORKS_ORDER)}, got {framework!r}"
        ) from None
