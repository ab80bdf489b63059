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
from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.registry import reference_impl

# Same value as costmodels.formulas.compression.qsgd.BUCKET_SIZE (a test keeps them equal).
DEFAULT_BUCKET_SIZE = 512
_SEED_BASE = 0x5EED_0000  # default seeds are this plus the rank: distinct noise on every rank


def pack_bits(codes: torch.Tensor, width: int) -> torch.Tensor:
    """Pack integer codes in [0, 2**width) into uint8, ``width`` bits each, least significant
    bit first; the last byte is padded with zero bits. Returns ceil(numel * width / 8) bytes."""
    if not isinstance(width, int) or not 1 <= width <= 31:
        raise ValueError(f"pack_bits: width must be an int in [1, 31], got {width!r}")
    # int32 halves the temporaries of int64; codes of up to 31 bits fit.
    codes = codes.reshape(-1).to(torch.int32)
    shifts = torch.arange(width, device=codes.device, dtype=torch.int32)
    bits = ((codes.unsqueeze(1) >> shifts) & 1).to(torch.uint8).reshape(-1)
    padding = (-bits.numel()) % 8
    if padding:
        bits = torch.cat([bits, bits.new_zeros(padding)])
    weights = 1 << torch.arange(8, device=codes.device, dtype=torch.int32)
    return (bits.view(-1, 8) * weights).sum(dim=1, dtype=torch.int32).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, width: int, count: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: the first ``count`` codes, as int64."""
    if packed.dtype != torch.uint8:
        raise TypeError(f"unpack_bits: packed must be uint8, got {packed.dtype}")
    if packed.numel() * 8 < count * width:
        raise ValueError(
            f"unpack_bits: {packed.numel()} bytes hold fewer than {count} codes of {width} bits"
        )
    shifts = torch.arange(8, device=packed.device, dtype=torch.uint8)
    bits = ((packed.reshape(-1).unsqueeze(1) >> shifts) & 1).reshape(-1)
    bits = bits[: count * width].view(count, width).to(torch.int64)
    return (bits << torch.arange(width, device=packed.device)).sum(dim=1)


class PrivateGenerators:
    """Uniform draws from private generators, one per device, never touching the global RNG.

    ``seed=None`` seeds each generator with a fixed base plus this process's rank in the default
    group (0 outside a process group), so ranks draw independent noise. An explicit ``seed`` is
    used as is: give every rank a different one, or their rounding noise is correlated.
    """

    def __init__(self, seed: int | None) -> None:
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        self.seed = seed
        self._by_device: dict[torch.device, torch.Generator] = {}

    def uniform(self, numel: int, device: torch.device) -> torch.Tensor:
        """``numel`` float32 draws from U[0, 1) on ``device``."""
        generator = self._by_device.get(device)
        if generator is None:
            seed = self.seed
            if seed is None:
                rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
                seed = _SEED_BASE + rank
            generator = torch.Generator(device=device).manual_seed(seed)
            self._by_device[device] = generator
        return torch.rand(numel, generator=generator, device=device, dtype=torch.float32)


def check_float_tensor(tensor: torch.Tensor, who: str) -> None:
    """Raise TypeError unless ``tensor`` is a floating-point tensor."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError(f"{who}: tensor must be a floating-point torch.Tensor")


@dataclass(frozen=True)
class QuantContext:
    """What decompression needs besides the payload: the original shape and dtype."""

    shape: torch.Size
    dtype: torch.dtype


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
