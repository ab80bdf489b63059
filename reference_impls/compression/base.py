"""The interface every gradient compressor shares (DESIGN.md, "Reference implementations").

``compress(tensor, name) -> (payload, ctx)`` turns a gradient into the tensors that travel;
``decompress(payload, ctx) -> tensor`` rebuilds a dense tensor of the original shape. A compressor
also declares how its payload may be combined across ranks (``"allreduce"`` when payloads of
different ranks can be summed element-wise, ``"allgather"`` when they must be gathered and
decompressed one by one), whether it is unbiased, and how many bytes its payload has.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

import torch

Communication = Literal["allreduce", "allgather"]
Payload = tuple[torch.Tensor, ...]


class Compressor(ABC):
    """Base class: stateless unless wrapped (see :class:`ErrorFeedback`)."""

    #: how payloads from different ranks are combined
    communication: Communication
    #: E[decompress(compress(g))] == g
    unbiased: bool

    @abstractmethod
    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, Any]:
        """Return the tensors to send and the context needed to decompress them.

        ``name`` identifies the tensor across iterations (a parameter or DDP bucket); stateful
        wrappers key their state by it, stateless compressors ignore it.
        """

    @abstractmethod
    def decompress(self, payload: Payload, ctx: Any) -> torch.Tensor:
        """Rebuild a dense tensor shaped like the one given to :meth:`compress`."""

    @abstractmethod
    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        """Bytes of the payload for a tensor of ``numel`` elements of ``dtype``."""
