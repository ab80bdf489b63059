"""QSGD: stochastic multi-level quantization of bucketed gradients (unbiased).

Paper: D. Alistarh, D. Grubic, J. Li, R. Tomioka and M. Vojnovic, "QSGD: Communication-efficient
SGD via gradient quantization and encoding", NIPS (NeurIPS) 2017, arXiv:1610.02132.

Algorithm (s = ``levels``, B = ``bucket_size``):

1. Flatten the gradient and cut it into buckets of B elements (the last one may be shorter).
2. Per bucket, norm = ||bucket||_2, sent as float32.
3. Per element, x = s |g_i| / norm lies in [0, s]; the level is floor(x) + 1 with probability
   x - floor(x) and floor(x) otherwise (a private generator flips the coins), so E[level] = x
   and the estimate is unbiased. Variance (the paper's Lemma 3.1), per bucket of B elements:
   E||Q(v) - v||^2 <= min(B / s^2, sqrt(B) / s) ||v||^2.
4. Code = sign bit and level in a fixed width of b = 1 + bit_length(s) bits, packed into uint8.
5. Decode: norm * sign * level / s.

Not implemented: the Elias integer coding the paper layers on top (variable-length codes); the
codes here have a fixed width, as the cost model assumes. Values are computed in float32 whatever
the gradient's dtype (the result is cast back).

Communication cost: norms and codes differ across ranks, so payloads are all-gathered: a rank
sends (p-1) (ceil(d b / 8) + 4 ceil(d / B)) bytes, the ``qsgd`` cost model's volume term with
w_v = 4 (equal to it when 8 divides d b; otherwise the last byte's padding is extra).

This module also holds the helpers the other quantizers share: :func:`pack_bits`,
:func:`unpack_bits` and :class:`PrivateGenerators`.

Example::

    qsgd = QSGD(levels=7)                     # 4 bits per element + one float32 per 512
    allreduce_compressed(grad, qsgd)          # grad becomes the average of the ranks' estimates
"""

from __future__ import annotations

import math

import torch

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.bits import (
    PrivateGenerators,
    QuantContext,
    check_float_tensor,
    pack_bits,
    unpack_bits,
)
from reference_impls.compression.catalog import register_compressor
from reference_impls.registry import reference_impl

# Same value as costmodels.formulas.compression.qsgd.BUCKET_SIZE (a test keeps them equal).
DEFAULT_BUCKET_SIZE = 512


@register_compressor("qsgd")
@reference_impl
class QSGD(Compressor):
    """Unbiased stochastic quantization to ``levels`` levels per bucket-normalised magnitude."""

    communication = "allgather"
    unbiased = True

    def __init__(
        self,
        levels: int = 7,  # s; 7 levels + sign fit in 4 bits
        bucket_size: int = DEFAULT_BUCKET_SIZE,  # B; smaller buckets: less variance, more norms
        seed: int | None = None,  # None: derived from the rank (see PrivateGenerators)
    ) -> None:
        if not isinstance(levels, int) or not 1 <= levels < 2**30:
            raise ValueError(f"QSGD: levels must be an int in [1, 2**30), got {levels!r}")
        if not isinstance(bucket_size, int) or bucket_size < 1:
            raise ValueError(f"QSGD: bucket_size must be a positive int, got {bucket_size!r}")
        self.levels, self.bucket_size = levels, bucket_size
        self.level_bits = levels.bit_length()  # levels 0..s need bit_length(s) bits
        self.coins = PrivateGenerators(seed)

    @property
    def bits_per_element(self) -> int:
        """b: one sign bit plus the level bits."""
        return 1 + self.level_bits

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, QuantContext]:
        check_float_tensor(tensor, "QSGD.compress")
        work = tensor.reshape(-1).to(torch.float32)
        numel, size = work.numel(), self.bucket_size
        buckets = math.ceil(numel / size)
        padded = torch.nn.functional.pad(work, (0, buckets * size - numel)).view(buckets, size)
        norms = padded.norm(dim=1)
        # A zero bucket quantizes to level 0 everywhere (avoid 0 * inf).
        factor = torch.where(norms > 0, self.levels / norms, torch.zeros_like(norms))
        scaled = (padded.abs() * factor.unsqueeze(1)).reshape(-1)[:numel]
        lower = scaled.floor()
        round_up = self.coins.uniform(numel, work.device) < scaled - lower
        # Rounding can push |g| / norm a hair above 1: never exceed the top level.
        level = (lower + round_up).clamp_max(self.levels).to(torch.int64)
        codes = ((work < 0).to(torch.int64) << self.level_bits) | level
        payload = (norms, pack_bits(codes, self.bits_per_element))
        return payload, QuantContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: QuantContext) -> torch.Tensor:
        norms, packed = payload
        numel = ctx.shape.numel()
        codes = unpack_bits(packed, self.bits_per_element, numel)
        level = (codes & ((1 << self.level_bits) - 1)).to(torch.float32)
        sign = 1 - 2 * (codes >> self.level_bits).to(torch.float32)
        step = (norms.to(torch.float32) / self.levels).repeat_interleave(self.bucket_size)
        return (sign * level * step[:numel]).to(ctx.dtype).view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        codes = math.ceil(numel * self.bits_per_element / 8)
        return codes + 4 * math.ceil(numel / self.bucket_size)
