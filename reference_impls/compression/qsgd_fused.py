"""QSGD at GPU speed: the same payload as :class:`~reference_impls.compression.qsgd.QSGD`, made by
one fused pass over the gradient.

Paper: D. Alistarh, D. Grubic, J. Li, R. Tomioka and M. Vojnovic, "QSGD: Communication-efficient
SGD via gradient quantization and encoding", NIPS 2017, arXiv:1610.02132 (the algorithm, steps
1-5 of qsgd.py).

What differs from qsgd.py, and why:

1. The coins: instead of a tensor of ``torch.rand`` draws (written to memory and read back, two
   extra passes of 4 bytes per element), element i rounds up when hashed_uniform(i, key) <
   x_i - floor(x_i), the hash a bijection keyed by one 32-bit word per call from a private
   generator (bits.py): still exactly unbiased, and computed inside the quantizing kernel.
2. The packing: for code widths that divide 8 (levels 1, 7, 127: 2, 4 or 8 bits) the 8 / b codes
   of a byte are shifted into place and summed, one reduction over a small axis, instead of
   expanding every code into b bytes of bits; other widths use bits.pack_bits.
3. The whole chain (norms, scaling, rounding, codes, packing) is one function that
   ``torch.compile`` fuses on CUDA (fused.py): about two reads of the gradient (norms, then
   codes) and the packed bytes written, against some twenty passes eagerly.

Payload, decoding, wire bytes and aggregation are QSGD's: a FusedQSGD payload decodes with
``QSGD.decompress`` and vice versa (the bit layout is pack_bits', least significant bit first).

Communication cost: as qsgd.py (cost model ``qsgd``, variant ``ring-allgather``).

Example::

    qsgd = get("qsgd/fused", levels=7)        # 4 bits per element + one float32 per 512
    allreduce_compressed(grad, qsgd)          # compiled kernels for large CUDA tensors
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reference_impls.compression.base import Payload
from reference_impls.compression.bits import (
    QuantContext,
    check_float_tensor,
    hashed_uniform,
    pack_bits,
    random_key,
)
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.fused import Fusable, check_fused
from reference_impls.compression.qsgd import DEFAULT_BUCKET_SIZE, QSGD
from reference_impls.registry import reference_impl


def quantize(
    flat: torch.Tensor, key: torch.Tensor, levels: int, bucket: int, level_bits: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps 1-4 for a 1-D tensor: (norms per bucket, codes packed into uint8).

    When the code width does not divide 8 the second result is the unpacked int32 codes of the
    padded buckets (the caller packs them with pack_bits)."""
    work = flat.to(torch.float32)
    numel = work.shape[0]
    buckets = (numel + bucket - 1) // bucket
    total = buckets * bucket
    padded = F.pad(work, (0, total - numel)).view(buckets, bucket)  # zeros quantize to code 0
    norms = padded.norm(dim=1)
    factor = torch.where(norms > 0, levels / norms, torch.zeros_like(norms))
    scaled = padded.abs() * factor.unsqueeze(1)
    lower = scaled.floor()
    positions = torch.arange(total, dtype=torch.int32, device=flat.device).view(buckets, bucket)
    round_up = hashed_uniform(positions, key) < scaled - lower
    level = (lower + round_up).clamp_max(levels).to(torch.int32)
    codes = (((padded < 0).to(torch.int32) << level_bits) | level).view(-1)
    width = level_bits + 1
    if 8 % width:
        return norms, codes
    per_byte = 8 // width
    grouped = F.pad(codes, (0, (-total) % per_byte)).view(-1, per_byte)
    shifts = torch.arange(per_byte, dtype=torch.int32, device=flat.device) * width
    packed = (grouped << shifts).sum(dim=1).to(torch.uint8)  # disjoint bit fields: sum == or
    return norms, packed[: (numel * width + 7) // 8]


def dequantize(
    norms: torch.Tensor,
    packed: torch.Tensor,
    numel: int,
    levels: int,
    bucket: int,
    level_bits: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Step 5 for code widths that divide 8: norm * sign * level / s, in ``dtype``."""
    width = level_bits + 1
    per_byte = 8 // width
    shifts = torch.arange(per_byte, dtype=torch.int32, device=packed.device) * width
    codes = ((packed.to(torch.int32).unsqueeze(1) >> shifts) & ((1 << width) - 1)).view(-1)
    buckets = norms.shape[0]
    codes = F.pad(codes[:numel], (0, buckets * bucket - numel)).view(buckets, bucket)
    level = (codes & ((1 << level_bits) - 1)).to(torch.float32)
    sign = 1 - 2 * (codes >> level_bits).to(torch.float32)
    step = (norms.to(torch.float32) / levels).unsqueeze(1)
    return (sign * level * step).view(-1)[:numel].to(dtype)


_QUANTIZE = Fusable(quantize)
_DEQUANTIZE = Fusable(dequantize)


@register_compressor("qsgd/fused")
@reference_impl(record="qsgd", variant="ring-allgather")
class FusedQSGD(QSGD):
    """QSGD's payload from fused kernels and hashed coins (see the module doc)."""

    def __init__(
        self,
        levels: int = 7,  # s; 7 levels + sign fit in 4 bits
        bucket_size: int = DEFAULT_BUCKET_SIZE,
        seed: int | None = None,  # None: derived from the rank (see bits.PrivateGenerators)
        fused: bool | None = None,  # None: compiled for large CUDA tensors (see fused.py)
    ) -> None:
        super().__init__(levels, bucket_size, seed)
        self.fused = check_fused(fused, "FusedQSGD")

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, QuantContext]:
        check_float_tensor(tensor, "FusedQSGD.compress")
        flat = tensor.reshape(-1)
        ctx = QuantContext(tensor.shape, tensor.dtype)
        if flat.numel() >= 2**31 - self.bucket_size:
            raise ValueError("FusedQSGD: tensors of 2**31 or more elements are not supported")
        if flat.numel() == 0:
            empty = torch.empty(0, dtype=torch.float32, device=flat.device)
            return (empty, torch.empty(0, dtype=torch.uint8, device=flat.device)), ctx
        key = random_key(self.coins.generator(flat.device), flat.device)
        norms, packed = _QUANTIZE(
            flat, key, self.levels, self.bucket_size, self.level_bits,
            fused=self.fused, device=flat.device, numel=flat.numel(),
        )  # fmt: skip
        if packed.dtype != torch.uint8:  # a width that does not divide 8: codes to pack
            packed = pack_bits(packed[: flat.numel()], self.bits_per_element)
        return (norms, packed), ctx

    def decompress(self, payload: Payload, ctx: QuantContext) -> torch.Tensor:
        norms, packed = payload
        numel = ctx.shape.numel()
        if 8 % self.bits_per_element or numel == 0:
            return super().decompress(payload, ctx)
        dense = _DEQUANTIZE(
            norms, packed, numel, self.levels, self.bucket_size, self.level_bits, ctx.dtype,
            fused=self.fused, device=packed.device, numel=numel,
        )  # fmt: skip
        return dense.view(ctx.shape)
