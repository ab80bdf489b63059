"""Error feedback (residual accumulation) around any compressor.

Papers: F. Seide et al., "1-bit stochastic gradient descent and its application to data-parallel
distributed training of speech DNNs", Interspeech 2014 (error feedback for 1-bit SGD);
S. U. Stich, J.-B. Cordonnier and M. Jaggi, "Sparsified SGD with memory", NeurIPS 2018.

Algorithm, per tensor ``name``: 1. corrected = g + e (e starts at zero); 2. send C(corrected);
3. e <- corrected - D(C(corrected)), this rank's own decompressed contribution. Invariant:
g + e_old = D(C(g + e_old)) + e_new, so no gradient mass is ever lost, only delayed. Adds no
communication: the residual stays local. Works for custom-pattern compressors too (PowerSGD's
residual is the rank's matrix minus its own low-rank reconstruction).

Example::

    ef = ErrorFeedback(get("topk-sparsification", ratio=0.01))
    allreduce_compressed(grad, ef, name="layer1.weight")
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from reference_impls.compression.base import Aggregated, Compressor, Payload
from reference_impls.registry import reference_impl


@reference_impl
class ErrorFeedback(Compressor):
    """Wrap ``inner`` so that what it drops is added back before the next compression."""

    unbiased = False

    def __init__(self, inner: Compressor) -> None:
        if not isinstance(inner, Compressor):
            raise TypeError(
                f"ErrorFeedback: inner must be a Compressor, got {type(inner).__name__}"
            )
        if isinstance(inner, ErrorFeedback):
            raise TypeError("ErrorFeedback: inner already has error feedback; wrap it only once")
        self.inner = inner
        self.communication = inner.communication
        self.residuals: dict[str, torch.Tensor] = {}

    def _corrected(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        if residual.shape != tensor.shape:
            raise ValueError(
                f"ErrorFeedback: tensor {name!r} changed shape from {tuple(residual.shape)} "
                f"to {tuple(tensor.shape)}; use a distinct name per tensor"
            )
        return tensor + residual

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, Any]:
        corrected = self._corrected(tensor, name)
        payload, ctx = self.inner.compress(corrected, name)
        local = self.inner.decompress(payload, ctx).view(corrected.shape)
        self.residuals[name] = corrected - local
        return payload, ctx

    def decompress(self, payload: Payload, ctx: Any) -> torch.Tensor:
        return self.inner.decompress(payload, ctx)

    def wire_bytes(self, numel: int, dtype: torch.dtype, **shape_info: Any) -> int:
        return self.inner.wire_bytes(numel, dtype, **shape_info)

    def aggregate(
        self, tensor: torch.Tensor, name: str = "", group: dist.ProcessGroup | None = None
    ) -> Aggregated:
        if self.communication != "custom":
            return super().aggregate(tensor, name, group)  # compress() updates the residual
        corrected = self._corrected(tensor, name)
        result = self.inner.aggregate(corrected, name, group)
        self.residuals[name] = corrected - result.local
        return result

    def state_dict(self) -> dict[str, Any]:
        return {
            "residuals": {name: r.clone() for name, r in self.residuals.items()},
            "inner": self.inner.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != {"residuals", "inner"}:
            raise ValueError(
                f"ErrorFeedback.load_state_dict: expected keys residuals, inner; got {list(state)}"
            )
        residuals = state["residuals"]
        if not all(isinstance(v, torch.Tensor) for v in residuals.values()):
            raise TypeError("ErrorFeedback.load_state_dict: every residual must be a tensor")
        self.residuals = {name: r.clone() for name, r in residuals.items()}
        self.inner.load_state_dict(state["inner"])
