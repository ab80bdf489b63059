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

    def _check_shape(self, residual: torch.Tensor, tensor: torch.Tensor, name: str) -> None:
        if residual.shape != tensor.shape:
            raise ValueError(
                f"ErrorFeedback: tensor {name!r} changed shape from {tuple(residual.shape)} "
                f"to {tuple(tensor.shape)}; use a distinct name per tensor"
            )

    def _corrected(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        residual = self.residuals.get(name)
        if residual is None:
            return tensor
        self._check_shape(residual, tensor, name)
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
        residual = self.residuals.get(name)
        if residual is None or residual.dtype != tensor.dtype:
            corrected = self._corrected(tensor, name)
            result = self.inner.aggregate(corrected, name, group)
            self.residuals[name] = corrected - result.local
            return result
        # Steps 1 and 3 in the residual's own buffer (e += g; e -= local): no temporaries of the
        # tensor's size, which on a CPU cost as much as PowerSGD's products. The inner
        # compressors never write to their input; a local that shares the buffer is copied.
        self._check_shape(residual, tensor, name)
        residual.add_(tensor)
        try:
            result = self.inner.aggregate(residual, name, group)
        except BaseException:
            residual.sub_(tensor)  # leave the residual as it was (up to rounding)
            raise
        local = result.local
        if local.untyped_storage().data_ptr() == residual.untyped_storage().data_ptr():
            local = local.clone()
        residual.sub_(local.view(residual.shape))
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
