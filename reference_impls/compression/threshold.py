"""Threshold sparsification (Strom 2015): send the coordinates whose magnitude reached tau.

Paper: N. Strom, "Scalable distributed DNN training using commodity GPU cloud computing",
Interspeech 2015, 1488-1492, doi:10.21437/Interspeech.2015-354. Strom keeps a residual per
worker; here that is :class:`~reference_impls.compression.error_feedback.ErrorFeedback` around
this compressor (``get("threshold-sparsification", tau=..., error_feedback=True)``).

Algorithm:

1. select every coordinate with |g_i| >= tau (tau is fixed; the count c varies with the data);
2. ``values="sign"`` (Strom): send one integer per coordinate, (i + 1) * sign(g_i), and the
   receiver applies +tau or -tau, so the error-feedback residual keeps g_i -+ tau;
   ``values="exact"``: send the values and the indices (c (w_v + w_i) bytes, not in the model);
3. exchange: the counts differ across ranks, so the ranks first all-gather their counts (one
   int64 each, a ring all-gather of (p-1) 8 bytes per rank), then run a ring all-gather whose
   blocks have the announced sizes; each rank decodes the p messages in rank order and adds them,
   so every rank gets a bitwise identical sum.

Communication cost (cost model ``threshold-sparsification``, variant ``ring-allgather``): with k
the number of coordinates sent, a rank sends (p - 1) k w_i bytes. With counts c_0 .. c_{p-1},
rank r forwards every block except that of rank r + 1, so it sends w_i (sum(c) - c_{r+1}) bytes:
exactly the formula when all counts equal k, and on average over ranks exactly the formula with k
= mean(c). The 8 (p - 1) bytes of counts are protocol overhead the model does not include.

Example::

    strom = get("threshold-sparsification", tau=1e-3, error_feedback=True)
    allreduce_compressed(grad, strom, name="fc.weight")
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allgather
from reference_impls.comm.wire import exchange
from reference_impls.compression.base import Aggregated, Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.registry import reference_impl


@dataclass(frozen=True)
class ThresholdContext:
    shape: torch.Size
    dtype: torch.dtype


def ring_allgather_varsize(
    part: torch.Tensor, counts: list[int], group: dist.ProcessGroup | None = None
) -> list[torch.Tensor]:
    """Ring all-gather of 1-d blocks whose lengths ``counts`` every rank already knows.

    In step s rank r forwards the block of rank r - s and receives that of rank r - s - 1, as in
    :func:`~reference_impls.collectives.ring.ring_allgather`; empty blocks are skipped on both
    sides by the wire layer, so no message carries nothing.
    """
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if part.numel() != counts[r]:
        raise ValueError(f"ring_allgather_varsize: rank {r} has {part.numel()} != {counts[r]}")
    blocks = [
        part if i == r else torch.empty(c, dtype=part.dtype, device=part.device)
        for i, c in enumerate(counts)
    ]
    right, left = (r + 1) % p, (r - 1) % p
    for step in range(p - 1):
        exchange(blocks[(r - step) % p], right, blocks[(r - step - 1) % p], left, group)
    return blocks


@register_compressor("threshold-sparsification")
@reference_impl
class ThresholdSparsifier(Compressor):
    """Send coordinates with |g| >= tau: as index-and-sign words (Strom) or values + indices."""

    communication = "custom"
    unbiased = False

    def __init__(
        self,
        tau: float,
        values: Literal["sign", "exact"] = "sign",
        index_dtype: torch.dtype = torch.int32,  # the w_i-byte word (index and sign in "sign")
    ) -> None:
        if isinstance(tau, bool) or not isinstance(tau, int | float) or not 0 < tau < math.inf:
            raise ValueError(f"ThresholdSparsifier: tau must be a finite number > 0, got {tau!r}")
        if values not in ("sign", "exact"):
            raise ValueError(
                f"ThresholdSparsifier: values must be 'sign' or 'exact', got {values!r}"
            )
        if index_dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"ThresholdSparsifier: index_dtype must be torch.int32 or torch.int64, "
                f"got {index_dtype}"
            )
        self.tau, self.values, self.index_dtype = float(tau), values, index_dtype

    def count(self, tensor: torch.Tensor) -> int:
        """How many coordinates of ``tensor`` reach the threshold (NaN never does)."""
        return int((tensor.abs() >= self.tau).sum())

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, ThresholdContext]:
        flat = tensor.reshape(-1)
        # "sign" stores i + 1 so that index 0 keeps its sign; the largest code is numel.
        if self.index_dtype == torch.int32 and flat.numel() >= 2**31 - 1:
            raise ValueError("ThresholdSparsifier: tensors this large need index_dtype=int64")
        indices = torch.nonzero(flat.abs() >= self.tau).view(-1)
        ctx = ThresholdContext(tensor.shape, tensor.dtype)
        if self.values == "exact":
            return (flat[indices].contiguous(), indices.to(self.index_dtype)), ctx
        signs = torch.where(flat[indices] < 0, -1, 1)
        codes = ((indices + 1) * signs).to(self.index_dtype)
        return (codes,), ctx

    def decompress(self, payload: Payload, ctx: ThresholdContext) -> torch.Tensor:
        dense = torch.zeros(ctx.shape.numel(), dtype=ctx.dtype, device=payload[0].device)
        if self.values == "exact":
            values, indices = payload
            dense.index_add_(0, indices.long(), values.to(ctx.dtype))
        else:
            codes = payload[0].long()
            applied = torch.where(codes < 0, -self.tau, self.tau).to(ctx.dtype)
            dense.index_add_(0, codes.abs() - 1, applied)
        return dense.view(ctx.shape)

    def payload_bytes(self, count: int, dtype: torch.dtype) -> int:
        """Bytes of one rank's payload when ``count`` coordinates pass the threshold."""
        index_bytes = torch.empty((), dtype=self.index_dtype).element_size()
        if self.values == "exact":
            return count * (torch.empty((), dtype=dtype).element_size() + index_bytes)
        return count * index_bytes

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        """The most one rank's payload can take (every coordinate passes); see payload_bytes."""
        return self.payload_bytes(numel, dtype)

    def aggregate(
        self, tensor: torch.Tensor, name: str = "", group: dist.ProcessGroup | None = None
    ) -> Aggregated:
        payload, ctx = self.compress(tensor, name)
        local = self.decompress(payload, ctx)
        if dist.get_world_size(group) == 1:
            return Aggregated(local.clone(), local)
        # 1. sizes first: a receiver must know how many bytes each block holds.
        count = torch.tensor([payload[0].numel()], dtype=torch.int64, device=tensor.device)
        counts = ring_allgather(count, group).view(-1).tolist()
        # 2. one variable-size ring all-gather per payload part, 3. decode in rank order.
        gathered = [ring_allgather_varsize(part, counts, group) for part in payload]
        total = torch.zeros_like(local)
        for blocks in zip(*gathered, strict=True):
            total += self.decompress(blocks, ctx)
        return Aggregated(total, local)
