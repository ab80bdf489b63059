"""Top-k sparsification: send the k largest-magnitude entries (values and indices).

Papers: A. F. Aji and K. Heafield, "Sparse communication for distributed gradient descent",
EMNLP 2017 (drop the smallest entries, keep the rest as a residual); S. U. Stich,
J.-B. Cordonnier and M. Jaggi, "Sparsified SGD with memory", NeurIPS 2018 (convergence with error
feedback). Wrap in :class:`~reference_impls.compression.error_feedback.ErrorFeedback` to keep the
dropped mass; top-k alone is biased.

Algorithm: 1. flatten; 2. k = max(1, ceil(ratio * numel)) (or a fixed k, capped at numel);
3. indices of the k largest |g|; 4. payload = (g[indices], indices as int32).

Communication cost: supports differ across ranks, so payloads are all-gathered: a rank sends
(p-1) k (w_v + w_i) bytes over a ring (cost model ``topk-sparsification``).

Example::

    ef_topk = ErrorFeedback(TopK(ratio=0.01))
    allreduce_compressed(grad, ef_topk)       # grad becomes the mean of every rank's top-k
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.registry import reference_impl


@dataclass(frozen=True)
class TopKContext:
    shape: torch.Size
    dtype: torch.dtype


@register_compressor("topk-sparsification")
@reference_impl
class TopK(Compressor):
    """Keep the k largest-magnitude entries of a tensor."""

    communication = "allgather"
    unbiased = False

    def __init__(
        self,
        ratio: float | None = None,
        k: int | None = None,
        index_dtype: torch.dtype = torch.int32,  # int32 halves index bytes below 2**31 elements
    ) -> None:
        if (ratio is None) == (k is None):
            raise ValueError("TopK: give exactly one of ratio (0 < ratio <= 1) or k (k >= 1)")
        if ratio is not None and not 0 < ratio <= 1:
            raise ValueError(f"TopK: ratio must be in (0, 1], got {ratio}")
        if k is not None and (not isinstance(k, int) or k < 1):
            raise ValueError(f"TopK: k must be a positive int, got {k!r}")
        if index_dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"TopK: index_dtype must be torch.int32 or torch.int64, got {index_dtype}"
            )
        self.ratio, self.k, self.index_dtype = ratio, k, index_dtype

    def k_for(self, numel: int) -> int:
        """How many entries are kept of a tensor with ``numel`` elements (0 for empty tensors)."""
        if numel == 0:
            return 0
        if self.k is not None:
            return min(self.k, numel)
        return min(numel, max(1, math.ceil(self.ratio * numel)))

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, TopKContext]:
        flat = tensor.reshape(-1)
        if self.index_dtype == torch.int32 and flat.numel() >= 2**31:
            raise ValueError("TopK: tensors of 2**31 or more elements need index_dtype=torch.int64")
        k = self.k_for(flat.numel())
        indices = flat.abs().topk(k, sorted=False).indices
        payload = (flat[indices].contiguous(), indices.to(self.index_dtype))
        return payload, TopKContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: TopKContext) -> torch.Tensor:
        values, indices = payload
        dense = torch.zeros(ctx.shape.numel(), dtype=ctx.dtype, device=values.device)
        dense.index_add_(0, indices.long(), values.to(ctx.dtype))
        return dense.view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        k = self.k_for(numel)
        value_bytes = torch.empty((), dtype=dtype).element_size()
        index_bytes = torch.empty((), dtype=self.index_dtype).element_size()
        return k * (value_bytes + index_bytes)
