"""Error feedback (residual accumulation) around any compressor.

Papers: F. Seide et al., "1-bit stochastic gradient descent and its application to data-parallel
distributed training of speech DNNs", Interspeech 2014 (error feedback for 1-bit SGD);
S. U. Stich, J.-B. Cordonnier and M. Jaggi, "Sparsified SGD with memory", NeurIPS 2018.

Algorithm, per tensor ``name``: 1. corrected = g + e (e starts at zero); 2. payload =
C(corrected); 3. e <- corrected - D(payload). Invariant: g + e_old = D(payload) + e_new, so no
gradient mass is ever lost, only delayed. Adds no communication: the residual stays local.
"""

from __future__ import annotations

from typing import Any

import torch

from reference_impls.compression.base import Compressor, Payload


class ErrorFeedback(Compressor):
    """Wrap ``inner`` so that what it drops is added back before the next compression."""

    unbiased = False

    def __init__(self, inner: Compressor) -> None:
        if not isinstance(inner, Compressor):
            raise TypeError(
                f"ErrorFeedback: inner must be a Compressor, got {type(inner).__name__}"
            )
        self.inner = inner
        self.communication = inner.communication
        self.residuals: dict[str, torch.Tensor] = {}

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, Any]:
        residual = self.residuals.get(name)
        if residual is not None and residual.shape != tensor.shape:
            raise ValueError(
                f"ErrorFeedback: tensor {name!r} changed shape from {tuple(residual.shape)} "
                f"to {tuple(tensor.shape)}; use a distinct name per tensor"
            )
        corrected = tensor if residual is None else tensor + residual
        payload, ctx = self.inner.compress(corrected, name)
        self.residuals[name] = corrected - self.inner.decompress(payload, ctx)
        return payload, ctx

    def decompress(self, payload: Payload, ctx: Any) -> torch.Tensor:
        return self.inner.decompress(payload, ctx)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        return self.inner.wire_bytes(numel, dtype)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: residual.clone() for name, residual in self.residuals.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise TypeError("ErrorFeedback.load_state_dict: every value must be a tensor")
        self.residuals = {name: residual.clone() for name, residual in state.items()}
