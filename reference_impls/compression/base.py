"""The interface every gradient compressor shares (DESIGN.md, "Reference implementations").

``compress(tensor, name) -> (payload, ctx)`` turns a gradient into the tensors that travel;
``decompress(payload, ctx) -> tensor`` rebuilds a dense tensor of the original shape. A compressor
declares how payloads of different ranks are combined:

- ``"allreduce"``: payloads can be summed element-wise (fp16, PowerSGD's factors ...);
- ``"allgather"``: payloads are gathered and decompressed one by one (top-k, QSGD ...);
- ``"custom"``: the method has its own message pattern (gTop-k's tree merge, PowerSGD's two
  rounds, signSGD's majority vote); the compressor overrides :meth:`Compressor.aggregate`.
  For these, ``compress``/``decompress`` still describe what *one* rank's compression does
  to its tensor with no communication (used by error feedback and the statistical tests).

It also declares whether it is unbiased (E[decompress(compress(g))] == g) and its wire bytes.
:meth:`Compressor.aggregate` is the one entry point the exchange, the DDP hook and error feedback
call: it returns the sum over ranks and this rank's own decompressed contribution.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal, NamedTuple

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allgather, ring_allreduce

Communication = Literal["allreduce", "allgather", "custom"]
Payload = tuple[torch.Tensor, ...]


class Aggregated(NamedTuple):
    """What :meth:`Compressor.aggregate` returns."""

    #: the combined result over the group: for linear methods the sum over ranks of each rank's
    #: ``local``; non-linear methods define their own (signSGD: p times the majority vote;
    #: gTop-k: the top-k of the merged sparse sums)
    total: torch.Tensor
    #: this rank's own decompressed contribution (what error feedback subtracts)
    local: torch.Tensor


def pack_bytes(payload: Payload) -> torch.Tensor:
    """The payload's parts, whatever their dtypes, as one flat uint8 tensor (same bytes)."""
    if not payload:
        raise ValueError("pack_bytes: the payload has no part")
    return torch.cat([part.contiguous().view(-1).view(torch.uint8) for part in payload])


def unpack_bytes(flat: torch.Tensor, like: Payload) -> Payload:
    """Split a :func:`pack_bytes` buffer back into tensors shaped and typed like ``like``."""
    parts, offset = [], 0
    for part in like:
        size = part.numel() * part.element_size()
        # clone: a slice at an odd byte offset cannot be viewed as a wider dtype in place
        chunk = flat[offset : offset + size].clone()
        parts.append(chunk.view(part.dtype).view(part.shape))
        offset += size
    if offset != flat.numel():
        raise ValueError(f"unpack_bytes: {flat.numel()} bytes for parts of {offset} bytes")
    return tuple(parts)


class Compressor(ABC):
    """Base class. Stateful compressors keep state per tensor ``name`` and override
    :meth:`state_dict` / :meth:`load_state_dict`."""

    #: how payloads from different ranks are combined
    communication: Communication
    #: E[decompress(compress(g))] == g
    unbiased: bool

    @abstractmethod
    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, Any]:
        """Return the tensors to send and the context needed to decompress them.

        ``name`` identifies the tensor across iterations (a parameter or DDP bucket); stateful
        compressors key their state by it, stateless compressors ignore it.
        """

    @abstractmethod
    def decompress(self, payload: Payload, ctx: Any) -> torch.Tensor:
        """Rebuild a dense tensor shaped like the one given to :meth:`compress`."""

    @abstractmethod
    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        """Bytes of one rank's payload for a tensor of ``numel`` elements of ``dtype``."""

    def aggregate(
        self, tensor: torch.Tensor, name: str = "", group: dist.ProcessGroup | None = None
    ) -> Aggregated:
        """Compress, exchange and decompress: the sum over ranks and this rank's contribution.

        Default for ``"allreduce"`` (ring all-reduce of every payload part, then one decompress)
        and ``"allgather"`` (the parts packed into one byte buffer and ring all-gathered once, so
        a payload of values and indices pays p-1 latencies, as the cost models count, not
        2(p-1); decompress each rank's payload and sum in rank order, so the result is bitwise
        identical on every rank). ``"custom"`` compressors override this method.
        """
        payload, ctx = self.compress(tensor, name)
        local = self.decompress(payload, ctx).view(tensor.shape)
        if self.communication == "allreduce":
            summed = tuple(part.clone() for part in payload)
            for part in summed:
                ring_allreduce(part, group)
            return Aggregated(self.decompress(summed, ctx).view(tensor.shape), local)
        if self.communication == "allgather":
            gathered = ring_allgather(pack_bytes(payload), group)  # one ring for all parts
            total = torch.zeros_like(tensor)
            for r in range(dist.get_world_size(group)):
                parts = unpack_bytes(gathered[r], payload)
                total += self.decompress(parts, ctx).view(tensor.shape)
            return Aggregated(total, local)
        raise NotImplementedError(
            f"{type(self).__name__}: communication={self.communication!r} needs its own aggregate()"
        )

    def state_dict(self) -> dict[str, Any]:
        """Per-tensor state to checkpoint (empty for stateless compressors)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            raise ValueError(f"{type(self).__name__} is stateless; got state keys {list(state)}")
