"""Helpers shared by the quantizing compressors: bit packing, generators, checks, context.

Not a technique (nothing here is registered): QSGD, TernGrad, signSGD, EF-signSGD, 1-bit SGD and
PowerSGD import these so the payload layout (codes packed least significant bit first into
uint8, the last byte zero-padded) and the seeding rule are written once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

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

    def generator(self, device: torch.device) -> torch.Generator:
        """This object's private generator on ``device`` (created and seeded on first use)."""
        generator = self._by_device.get(device)
        if generator is None:
            seed = self.seed
            if seed is None:
                rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
                seed = _SEED_BASE + rank
            generator = torch.Generator(device=device).manual_seed(seed)
            self._by_device[device] = generator
        return generator

    def uniform(self, numel: int, device: torch.device) -> torch.Tensor:
        """``numel`` float32 draws from U[0, 1) on ``device``."""
        generator = self.generator(device)
        return torch.rand(numel, generator=generator, device=device, dtype=torch.float32)


# MurmurHash3's 32-bit finalizer (fmix32; A. Appleby, MurmurHash3, public domain), constants as
# int32 two's complement: torch multiplies int32 with wrap-around on CPU and CUDA alike.
_FMIX_1 = 0x85EBCA6B - (1 << 32)
_FMIX_2 = 0xC2B2AE35 - (1 << 32)


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int32 (torch's >> is arithmetic: clear the copied sign bits)."""
    return (x >> bits) & ((1 << (32 - bits)) - 1)


def hashed_uniform(positions: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Float32 draws in [0, 1), multiples of 2**-24 like ``torch.rand``, from int32 positions.

    u = fmix32(position XOR key) / 2**32, truncated to 24 bits. fmix32 is a bijection of 32-bit
    words, so when ``key`` is uniform on all 2**32 values (one draw from a private generator per
    call) every position's u is exactly uniform: stochastic rounding stays unbiased. Unlike
    ``torch.rand`` it needs no random tensor in memory: under ``torch.compile`` the hash is a few
    integer instructions inside the quantizing kernel.
    """
    h = positions ^ key
    h = h ^ _shift_right(h, 16)
    h = h * _FMIX_1
    h = h ^ _shift_right(h, 13)
    h = h * _FMIX_2
    h = h ^ _shift_right(h, 16)
    return _shift_right(h, 8).to(torch.float32) * 2.0**-24


def random_key(generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """One uniform int32 word (shape (1,)) on ``device`` from a private generator."""
    word = torch.randint(-(2**31), 2**31, (1,), generator=generator, device=device)
    return word.to(torch.int32)


def check_float_tensor(tensor: torch.Tensor, who: str) -> None:
    """Raise TypeError unless ``tensor`` is a floating-point tensor."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError(f"{who}: tensor must be a floating-point torch.Tensor")


@dataclass(frozen=True)
class QuantContext:
    """What decompression needs besides the payload: the original shape and dtype."""

    shape: torch.Size
    dtype: torch.dtype
