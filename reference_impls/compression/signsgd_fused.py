"""signSGD with majority vote at GPU speed: sign bits packed and unpacked in one fused pass.

Papers: J. Bernstein, Y.-X. Wang, K. Azizzadenesheli and A. Anandkumar, "signSGD: Compressed
optimisation for non-convex problems", ICML 2018, arXiv:1802.04434; J. Bernstein, J. Zhao,
K. Azizzadenesheli and A. Anandkumar, "signSGD with majority vote is communication efficient and
fault tolerant", ICLR 2019, arXiv:1810.05291.

The method, payload and exchange are :class:`~reference_impls.compression.signsgd.SignSGD`'s
(one bit per element, least significant bit first, sign(0) = +1; the vote sharded over the
ranks). What differs is how the bits are made and read:

1. pack: (g < 0) as one byte per element, padded to a multiple of 8, viewed as rows of 8 and
   shifted into place and summed, instead of bits.pack_bits' general path (an int32 per
   element and a bit tensor per code width); under ``torch.compile`` (fused.py) this is one
   kernel reading 4 bytes and writing 1/8 byte per element of a float32 gradient;
2. unpack: byte >> (0..7) & 1, then 1 - 2 bit in the gradient's dtype, also one kernel.

Communication cost: as signsgd.py (cost model ``signsgd``, variant ``sharded-ps``).

Example::

    allreduce_compressed(grad, get("signsgd/fused"))   # the element-wise majority of signs
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reference_impls.compression.base import Payload
from reference_impls.compression.bits import check_float_tensor
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.fused import Fusable, check_fused
from reference_impls.compression.signsgd import SignContext, SignSGD
from reference_impls.registry import reference_impl


def pack_signs(flat: torch.Tensor) -> torch.Tensor:
    """ceil(numel / 8) bytes: bit j of byte i is 1 where element 8 i + j is negative."""
    negative = (flat < 0).to(torch.uint8)
    rows = F.pad(negative, (0, (-flat.shape[0]) % 8)).view(-1, 8)
    shifts = torch.arange(8, dtype=torch.uint8, device=flat.device)
    return (rows << shifts).sum(dim=1, dtype=torch.uint8)  # disjoint bits: sum == or


def unpack_signs(packed: torch.Tensor, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """+1 / -1 in ``dtype`` for the first ``numel`` elements of :func:`pack_signs` bytes."""
    shifts = torch.arange(8, dtype=torch.uint8, device=packed.device)
    bits = ((packed.unsqueeze(1) >> shifts) & 1).view(-1)[:numel]
    return (1 - 2 * bits.to(torch.int32)).to(dtype)


_PACK = Fusable(pack_signs)
_UNPACK = Fusable(unpack_signs)


@register_compressor("signsgd/fused")
@reference_impl(record="signsgd", variant="sharded-ps")
class FusedSignSGD(SignSGD):
    """SignSGD whose bits are packed and unpacked by fused kernels (see the module doc)."""

    def __init__(self, fused: bool | None = None) -> None:  # None: compiled when large on CUDA
        self.fused = check_fused(fused, "FusedSignSGD")

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, SignContext]:
        check_float_tensor(tensor, "FusedSignSGD.compress")
        flat = tensor.reshape(-1)
        bits = _PACK(flat, fused=self.fused, device=flat.device, numel=flat.numel())
        return (bits,), SignContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: SignContext) -> torch.Tensor:
        (bits,) = payload
        numel = ctx.shape.numel()
        signs = _UNPACK(bits, numel, ctx.dtype, fused=self.fused, device=bits.device, numel=numel)
        return signs.view(ctx.shape)
