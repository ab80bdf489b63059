"""EF-signSGD: scaled signs, (||g||_1 / d) * sign(g), with error feedback.

Paper: S. P. Karimireddy, Q. Rebjock, S. U. Stich and M. Jaggi, "Error feedback fixes SignSGD and
other gradient compression schemes", ICML 2019, arXiv:1901.09847.

Algorithm, per tensor of d elements and per step (error e starts at zero):

1. corrected = g + e (error feedback, :class:`~reference_impls.compression.ErrorFeedback`).
2. Scale = ||corrected||_1 / d, sent as one float32.
3. Bits: 1 where corrected_i < 0, else 0, packed eight to a byte (sign(0) counts as +1; the
   error buffer takes back whatever that costs).
4. Decode: scale * (+1 or -1); e <- corrected - decoded.

The record's method is the pair "scaled sign + error feedback", so :func:`ef_signsgd` (what
``get("ef-signsgd")`` returns) is ``ErrorFeedback(ScaledSign())``; :class:`ScaledSign` alone is
the biased compressor. Do not pass ``error_feedback=True`` to ``get`` for this record: that
would wrap a second error buffer around the first.

Communication cost: scales differ across ranks, so payloads are all-gathered: a rank sends
(p-1) (ceil(d / 8) + 4) bytes, the ``ef-signsgd`` cost model's volume term with b = 1 and w_v = 4
(equal when 8 divides d). An empty tensor sends nothing (the model still counts its scale). The
error buffer stays local.

Example::

    ef = ef_signsgd()                          # = ErrorFeedback(ScaledSign())
    allreduce_compressed(grad, ef, name="layer1.weight")
"""

from __future__ import annotations

import math

import torch

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.bits import (
    QuantContext,
    check_float_tensor,
    pack_bits,
    unpack_bits,
)
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.error_feedback import ErrorFeedback
from reference_impls.registry import reference_impl


class ScaledSign(Compressor):
    """Mean magnitude times the sign: 1 bit per element plus one float32 per tensor."""

    communication = "allgather"
    unbiased = False

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, QuantContext]:
        check_float_tensor(tensor, "ScaledSign.compress")
        work = tensor.reshape(-1).to(torch.float32)
        ctx = QuantContext(tensor.shape, tensor.dtype)
        # Empty tensor: no scale either (the mean of nothing is undefined and nothing is sent).
        scale = work.abs().mean().view(1) if work.numel() else work.new_empty(0)
        return (scale, pack_bits(work < 0, 1)), ctx

    def decompress(self, payload: Payload, ctx: QuantContext) -> torch.Tensor:
        scale, bits = payload
        numel = ctx.shape.numel()
        if numel == 0:
            return torch.zeros(ctx.shape, dtype=ctx.dtype, device=bits.device)
        sign = 1 - 2 * unpack_bits(bits, 1, numel).to(torch.float32)
        return (sign * scale.to(torch.float32)).to(ctx.dtype).view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        return math.ceil(numel / 8) + 4 if numel else 0


@register_compressor("ef-signsgd")
@reference_impl
def ef_signsgd() -> ErrorFeedback:
    """EF-signSGD as the paper runs it: scaled signs inside an error-feedback loop."""
    return ErrorFeedback(ScaledSign())
