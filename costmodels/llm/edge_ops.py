"""Kernels outside the transformer layers: embedding, final norm, logit layer, loss, optimizer.

* Embedding (first pipeline stage): a gather of T rows of h (read + write, 4 bytes per
  element); GPT style adds learned positions (6) and embedding dropout (5). Backward scatters
  the gradient into the embedding's gradient (read 2 + atomic add into fp32, 4 + 4).
* Head (last stage): the final norm, the logit GEMM T x V/t x h (bf16 also under FP8: the output
  layer is not an fp8 module), its two backward GEMMs, and cross-entropy over the T x V/t
  logits with the framework's byte counts (costmodels/llm/frameworks.py). Megatron pads the
  vocabulary to a multiple of 128 x t (``--make-vocab-size-divisible-by 128``); PyTorch does
  not.
* Multi-token prediction (issue 39; DeepSeek-V3, arXiv:2412.19437, Sec. 2.2), on the last stage
  per depth beside its transformer block (priced as a layer, costmodels/llm/layer_kinds.py):
  the embedding lookup of the shifted tokens, the two input RMSNorms, the projection of the
  concatenated [2h] input to h (a T x h/t x 2h GEMM, column-parallel as Megatron-Core's
  ``eh_proj``) and another head (norm, logits, loss).
* Optimizer (once per step): the framework's bytes per parameter on the parameters this GPU
  updates (all of its stage shard, or 1/dp of it under ZeRO >= 1), in passes of multi-tensor
  kernels that each take a few dozen tensors per launch (apex ``multi_tensor_apply``; we count
  one launch per 36 tensors, its limit for four tensor lists).
"""

from __future__ import annotations

import math

from costmodels.llm.frameworks import KernelSet
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.shapes import TransformerShape

TENSORS_PER_LAUNCH = 36
TENSORS_PER_LAYER = {True: 9, False: 12}  # Llama style (no biases) / GPT style, per layer


def padded_vocab(vocab: int, tp: int, kernel_set: KernelSet) -> int:
    if kernel_set.name.startswith("megatron"):
        multiple = 128 * tp
        return math.ceil(vocab / multiple) * multiple
    return vocab


def embedding_kernels(
    shape: TransformerShape, tokens: int
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    elements = tokens * shape.hidden
    gpt = not shape.gated_mlp
    fwd = [memory_kernel("embedding-lookup", 4.0 * elements)]
    bwd = [memory_kernel("embedding-grad", 10.0 * elements, launches=2)]
    if gpt:
        fwd.append(memory_kernel("position-add-dropout", 11.0 * elements, launches=2))
        bwd.append(memory_kernel("position-dropout-grad", 7.0 * elements, launches=2))
    return tuple(fwd), tuple(bwd)


def head_kernels(
    shape: TransformerShape, tokens: int, tp: int, sequence_parallel: bool, kernel_set: KernelSet
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """(forward, backward) of final norm + logit GEMM + cross-entropy for one micro-batch."""
    vocab = padded_vocab(shape.vocab, tp, kernel_set) // tp
    h = shape.hidden
    norm_elements = (tokens / tp if sequence_parallel else tokens) * h
    logits = GemmShape(tokens, vocab, h)
    logit_elements = float(tokens * vocab)
    (loss_fk, loss_fb), (loss_bk, loss_bb) = kernel_set.loss_fwd, kernel_set.loss_bwd
    fwd = (
        memory_kernel("final-norm", 4.0 * norm_elements),
        gemm_kernel("logits", "gemm", logits, "bf16"),
        memory_kernel("cross-entropy", loss_fb * logit_elements, launches=loss_fk),
    )
    bwd = (
        memory_kernel("cross-entropy-grad", loss_bb * logit_elements, launches=loss_bk),
        gemm_kernel("logits-dgrad", "gemm", GemmShape(tokens, h, vocab), "bf16"),
        gemm_kernel("logits-wgrad", "gemm", GemmShape(h, vocab, tokens, out_bytes=4.0), "bf16"),
        memory_kernel("final-norm-grad", 6.0 * norm_elements, launches=2),
    )
    if shape.mtp:  # each depth: embedding, two norms, the 2h -> h projection, another head
        out = h // tp
        mtp_fwd = (memory_kernel("mtp-embedding-norms", 12.0 * tokens * h, launches=3),
                   gemm_kernel("mtp-projection", "gemm", GemmShape(tokens, out, 2 * h), "bf16"))
        mtp_bwd = (gemm_kernel("mtp-projection-dgrad", "gemm", GemmShape(tokens, 2 * h, out),
                               "bf16"),
                   gemm_kernel("mtp-projection-wgrad", "gemm",
                               GemmShape(2 * h, out, tokens, out_bytes=4.0), "bf16"),
                   memory_kernel("mtp-norms-grad", 12.0 * tokens * h, launches=4))
        fwd += (mtp_fwd + fwd) * shape.mtp
        bwd += (bwd + mtp_bwd) * shape.mtp
    return fwd, bwd


def optimizer_kernel(params: float, layers: float, gated: bool, kernel_set: KernelSet) -> Kernel:
    """The optimizer step over ``params`` parameters held in ``layers`` layers' tensors."""
    tensors = max(1.0, layers * TENSORS_PER_LAYER[gated] + 2)
    launches = kernel_set.optimizer_passes * math.ceil(tensors / TENSORS_PER_LAUNCH)
    return memory_kernel("optimizer", kernel_set.optimizer_bytes_per_param * params, launches)
