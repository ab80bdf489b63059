"""Argument checks and flat views shared by the collectives (not a technique: not registered)."""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.comm.checks import check_same_layout

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_tensor(tensor: object, what: str, floats_only: bool = True) -> torch.Tensor:
    """Return ``tensor`` if it is a tensor (of a float dtype when summing); raise TypeError."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if floats_only and tensor.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{what}: tensor dtype must be one of {FLOAT_DTYPES}, got {tensor.dtype}")
    return tensor


def flat_view(
    tensor: torch.Tensor,
    what: str,
    group: dist.ProcessGroup | None,
    floats_only: bool = True,
) -> torch.Tensor:
    """A 1-D contiguous alias of ``tensor``, or a copy when it is not contiguous.

    The wire layer sends contiguous buffers only. Pair with :func:`write_back` after an in-place
    collective so a non-contiguous caller still sees the result. Also runs the opt-in layout
    check across ``group`` (``COMMATLAS_CHECKS=1``; a no-op otherwise).
    """
    check_tensor(tensor, what, floats_only)
    check_same_layout(tensor, group, what)
    return tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()


def write_back(tensor: torch.Tensor, flat: torch.Tensor) -> None:
    """Copy ``flat`` into ``tensor`` when :func:`flat_view` had to make a copy."""
    if not tensor.is_contiguous():
        tensor.copy_(flat.view(tensor.shape))


def check_positive_int(value: object, name: str, what: str) -> int:
    """Return ``value`` if it is an int >= 1 (bools refused); raise TypeError or ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{what}: {name} must be >= 1, got {value}")
    return value
