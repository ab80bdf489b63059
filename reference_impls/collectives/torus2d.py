"""2D-torus all-reduce: reduce-scatter along rows, all-reduce along columns, all-gather along
rows.

Papers: H. Mikami et al., "Massively distributed SGD: ImageNet/ResNet-50 training in a flash",
arXiv:1811.05233, 2018; C. Ying et al., "Image classification at supercomputer scale",
arXiv:1811.06992, 2018.

Algorithm (the p ranks fill a ``rows x cols`` grid row by row, rank = i * cols + j):

1. Each row of g = cols ranks runs a ring reduce-scatter: the rank in column j ends with the row
   sum of chunk j of ``flat.tensor_split(cols)``.
2. Each column of p/g = rows ranks runs a ring all-reduce of its chunk.
3. Each row runs a ring all-gather of its cols finished chunks.

This is the hierarchical all-reduce's scheme with rows as nodes; the difference is the network
it assumes (rows and columns on disjoint torus links, one alpha and beta), so the code is
:func:`reference_impls.collectives.hierarchical.two_level_allreduce` on a grid.

Communication cost (cost model ``2d-torus-allreduce``, variant ``ring-phases``, g = cols):
2 (g-1) + 2 (p/g - 1) steps; bytes sent by a rank 2 (g-1)/g n + 2 (p/g - 1)/p n when p divides
the element count (exactly: n - |chunk j| + n - |chunk j+1| in its row, plus a ring all-reduce
of chunk j in its column).

The row and column sub-groups are created on the first call and cached; see
:mod:`reference_impls.collectives._subgroups` for who must make that first call.

Example::

    from reference_impls.collectives import torus2d_allreduce
    torus2d_allreduce(grad, shape=(4, 8))     # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from reference_impls.collectives._common import check_positive_int, flat_view, write_back
from reference_impls.collectives._subgroups import grid_subgroups
from reference_impls.collectives.hierarchical import two_level_allreduce
from reference_impls.registry import reference_impl


def squarest_shape(p: int) -> tuple[int, int]:
    """(rows, cols) with rows * cols == p, rows <= cols and rows as large as possible."""
    rows = max(d for d in range(1, math.isqrt(p) + 1) if p % d == 0)
    return rows, p // rows


@reference_impl(record="2d-torus-allreduce", variant="ring-phases")
def torus2d_allreduce(
    tensor: torch.Tensor,
    group: dist.ProcessGroup | None = None,
    shape: tuple[int, int] | None = None,
) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    ``shape``: the grid's (rows, cols); rows * cols must equal the group size. By default the
    squarest grid, :func:`squarest_shape`. Any numel, the float dtypes.
    """
    what = "torus2d_allreduce"
    flat = flat_view(tensor, what, group)
    p = dist.get_world_size(group)
    if shape is None:
        shape = squarest_shape(p)
    if not isinstance(shape, tuple | list) or len(shape) != 2:
        raise TypeError(f"{what}: shape must be a (rows, cols) pair, got {shape!r}")
    rows, cols = (check_positive_int(side, "shape", what) for side in shape)
    if rows * cols != p:
        raise ValueError(f"{what}: shape={tuple(shape)} has {rows * cols} ranks, group has {p}")
    if p == 1 or flat.numel() == 0:
        return
    row_group, col_group = grid_subgroups(group, cols=cols)
    two_level_allreduce(flat, row_group, col_group)
    write_back(tensor, flat)
