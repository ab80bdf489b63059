"""Fused kernels for the GPU-speed compressors: ``torch.compile`` on CUDA, plain eager elsewhere.

Not a technique (nothing here is registered). A compressor written as a chain of element-wise
torch operations reads and writes the whole tensor once per operation in eager mode; the same
function under ``torch.compile`` (TorchInductor generating Triton kernels) becomes one or two
kernels that read the gradient once, which is what brings a quantizer near the read-once memory
floor on a GPU. No native code of our own: torch and its compiler only.

:class:`Fusable` wraps a pure tensor function. A call runs the compiled version when
:func:`use_fused` says so: ``fused=None`` (automatic) on CUDA tensors of at least
:data:`FUSE_MIN_NUMEL` elements (below that, launch latency dominates and compiling would cost
more than it saves), ``fused=True`` always, ``fused=False`` never; ``COMMATLAS_FUSED=0`` in the
environment turns it off everywhere. The function is compiled once, with dynamic shapes, so
every tensor size shares one compiled kernel. When the automatic choice cannot compile (no
Triton, an unsupported platform) it warns once and stays eager; ``fused=True`` raises instead.

Cost: the first fused call of each function compiles it (seconds); later calls cost the kernel
time plus a few microseconds of guard checks.

Example::

    double_abs = Fusable(lambda x: 2 * x.abs())
    y = double_abs(grad, fused=None, device=grad.device, numel=grad.numel())
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import torch

#: tensors below this many elements run eagerly in automatic mode (1 MiB of float32)
FUSE_MIN_NUMEL = 1 << 18


def check_fused(fused: object, who: str) -> bool | None:
    """Validate a ``fused`` argument (None, True or False)."""
    if fused is not None and not isinstance(fused, bool):
        raise ValueError(f"{who}: fused must be None (automatic), True or False, got {fused!r}")
    return fused


def use_fused(device: torch.device, numel: int, fused: bool | None) -> bool:
    """Whether work on ``numel`` elements on ``device`` should run compiled (see the module
    doc)."""
    if os.environ.get("COMMATLAS_FUSED", "").strip() == "0" or fused is False:
        return False
    if fused is True:
        return True
    return device.type == "cuda" and numel >= FUSE_MIN_NUMEL


class Fusable:
    """A pure tensor function that runs eagerly or compiled, per call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._compiled: Callable[..., Any] | None = None
        self.broken: str = ""  # why compiling failed, once it has (automatic mode then stays eager)

    def __call__(self, *args: Any, fused: bool | None, device: torch.device, numel: int) -> Any:
        """``fn(*args)``, compiled when ``use_fused(device, numel, fused)``."""
        if not use_fused(device, numel, fused) or (self.broken and fused is None):
            return self.fn(*args)
        if self._compiled is None:
            self._compiled = torch.compile(self.fn, dynamic=True, fullgraph=True)
        try:
            return self._compiled(*args)
        except Exception as error:  # no compiler here, or it refused this platform
            if fused is True:
                raise
            self.broken = f"{type(error).__name__}: {error}"
            warnings.warn(
                f"{getattr(self.fn, '__name__', 'function')}: torch.compile failed, running "
                f"eagerly ({self.broken[:200]})",
                RuntimeWarning,
                stacklevel=2,
            )
            return self.fn(*args)
