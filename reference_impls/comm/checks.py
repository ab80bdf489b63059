"""Opt-in consistency check: do all ranks hand a collective tensors of the same layout?

A collective whose ranks disagree on a tensor's size or dtype does not fail cleanly: point-to-point
messages of the wrong length either error on one rank only or wait forever for bytes that never
come, and the process group's timeout is the first thing that speaks. :func:`check_same_layout`
turns that into one clear ``ValueError`` raised on *every* rank at the call site, naming the
function, the ranks and what differs.

Cost: one extra all-gather of ``_ROW`` int64 values per rank (80 bytes each, through
``dist.all_gather_into_tensor``, spelled ``all_gather_single`` from torch 2.13 on), not through
the byte-counting wire layer, so it never changes a reference implementation's measured volume;
its time is about alpha log p. That is why it is off by default: a call returns at once, with no
communication, unless the environment sets ``COMMATLAS_CHECKS=1`` (read at call time, so a test
or a launcher can switch it per process) or the caller passes ``force=True``.

Without the check, mismatched tensors on gloo make the receiving rank abort its process
(``Received data size doesn't match expected size``), make ranks wait until the process-group
timeout (one rank's tensor is empty, so the wire layer skips a message the peer waits for), or,
when byte counts happen to agree (float32 of 2n elements against float64 of n), sum garbage
silently. The check turns all three into the same ``ValueError`` on every rank.

Call sites: the public entry points that hand a tensor to other ranks call it first, before any
message goes out, with their own name as ``what`` (``ring_allreduce``, ``allreduce_compressed``,
``ps_push_pull`` ...). Every rank of the group must make the call, as for any collective.

Example::

    from reference_impls.comm.checks import check_same_layout

    def ring_allreduce(tensor, group=None):
        check_same_layout(tensor, group, "ring_allreduce")   # no-op unless COMMATLAS_CHECKS=1
        ...
"""

from __future__ import annotations

import os
import zlib

import torch
import torch.distributed as dist

ENV_VAR = "COMMATLAS_CHECKS"
#: dimensions sent verbatim so the error message can print other ranks' shapes
_SHOWN_DIMS = 6
#: numel, dtype code, ndim, shape digest, then the first _SHOWN_DIMS dimensions (-1 padded)
_ROW = 4 + _SHOWN_DIMS


# torch 2.13 renamed all_gather_into_tensor (now deprecated, with a warning) to all_gather_single.
_all_gather_into_tensor = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def checks_enabled() -> bool:
    """True when ``COMMATLAS_CHECKS`` is set to 1/true/yes/on in this process's environment."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def _code(text: str) -> int:
    # crc32 rather than hash(): Python salts str hashes per process, and ranks must agree.
    return zlib.crc32(text.encode())


_DTYPES = {_code(str(d)): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


def _describe_row(row: list[int]) -> dict[str, str]:
    numel, dtype_code, ndim, _digest, *dims = row
    if ndim <= _SHOWN_DIMS:
        shape = str(tuple(dims[:ndim]))
    else:
        shape = f"<{ndim}-d, first dims {tuple(dims)}>"
    dtype = _DTYPES.get(dtype_code)
    return {
        "numel": str(numel),
        "dtype": str(dtype) if dtype is not None else f"<dtype #{dtype_code}>",
        "shape": shape,
    }


def layout_row(tensor: torch.Tensor) -> list[int]:
    """The values one rank contributes: numel, dtype code, ndim, shape digest, leading dims."""
    shape = tuple(tensor.shape)
    dims = list(shape[:_SHOWN_DIMS]) + [-1] * (_SHOWN_DIMS - min(len(shape), _SHOWN_DIMS))
    digest = _code(",".join(map(str, shape)))
    return [tensor.numel(), _code(str(tensor.dtype)), len(shape), digest, *dims]


def _differences(rows: list[list[int]]) -> list[str]:
    """One phrase per differing field, grouping ranks by value (ranks are group ranks)."""
    described = [_describe_row(row) for row in rows]
    phrases = []
    for field, index in (("dtype", 1), ("shape", 3), ("numel", 0)):
        values: dict[int, list[int]] = {}
        for rank, row in enumerate(rows):
            values.setdefault(row[index], []).append(rank)
        if len(values) > 1:
            parts = [f"{described[ranks[0]][field]} on ranks {ranks}" for ranks in values.values()]
            phrases.append(f"{field} differs: " + " vs ".join(parts))
    return phrases


def require_process_group(group: dist.ProcessGroup | None, what: str) -> None:
    """One clear ValueError when no process group exists (torch's own is a bare traceback from
    deep inside ``get_world_size``); always on, it costs one flag read."""
    if group is None and not (dist.is_available() and dist.is_initialized()):
        raise ValueError(
            f"{what}: no process group: call torch.distributed.init_process_group(...) first "
            "(torchrun sets up what it needs; on one machine reference_impls.testing."
            "run_distributed starts the processes), or pass group="
        )


def check_same_layout(
    tensor: torch.Tensor,
    group: dist.ProcessGroup | None,
    what: str,
    *,
    force: bool = False,
) -> None:
    """Raise ``ValueError`` on every rank if ranks of ``group`` pass tensors of different layout.

    Compares numel, dtype and shape. Does nothing (no communication) unless
    ``COMMATLAS_CHECKS=1`` or ``force=True``; every rank of the group must call it together.
    """
    require_process_group(group, what)
    if not (force or checks_enabled()):
        return
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: tensor must be a torch.Tensor, got {type(tensor).__name__}")
    world = dist.get_world_size(group)
    if world == 1:
        return
    # The tensor's device: NCCL groups only move device tensors, gloo handles CPU ones.
    mine = torch.tensor(layout_row(tensor), dtype=torch.int64, device=tensor.device)
    gathered = torch.empty(world * _ROW, dtype=torch.int64, device=tensor.device)
    _all_gather_into_tensor(gathered, mine, group=group)
    rows = gathered.view(world, _ROW).tolist()
    if all(row == rows[0] for row in rows):
        return
    differences = _differences(rows)
    raise ValueError(
        f"{what}: ranks of the group passed tensors of different layout ("
        + "; ".join(differences)
        + "); every rank must pass the same shape and dtype"
    )
