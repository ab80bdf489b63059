"""Pairwise-exchange all-to-all over point-to-point sends.

Paper: R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
operations in MPICH", Int. J. High Perform. Comput. Appl. 19(1):49-66, 2005 (the pairwise
exchange MPICH uses for long messages).

Algorithm (every rank holds p equal blocks along dim 0, block j destined for rank j):

1. Copy the own block, input block r, to output block r.
2. Steps i = 1 .. p-1: send input block (r+i) mod p to rank r+i while receiving output block
   (r-i) mod p from rank r-i. Each step every rank sends and receives exactly one block, and
   the partners differ in every step, so no link carries two blocks at once.

Communication cost (cost model ``alltoall``, variant ``pairwise``): (p-1) (alpha + n/p beta),
where n is the bytes a rank holds for all ranks; every rank sends (p-1)/p n bytes.

Example::

    from reference_impls.collectives import pairwise_alltoall
    output = torch.empty_like(tokens)
    pairwise_alltoall(output, tokens)     # like dist.all_to_all_single(output, tokens)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._common import check_tensor
from reference_impls.comm.checks import check_same_layout, require_process_group
from reference_impls.comm.wire import exchange
from reference_impls.registry import reference_impl


def _check_shapes(output: torch.Tensor, input: torch.Tensor, p: int) -> None:
    what = "pairwise_alltoall"
    check_tensor(output, what, floats_only=False)
    check_tensor(input, what, floats_only=False)
    if input.dim() == 0 or input.shape[0] % p != 0:
        raise ValueError(
            f"{what}: input's first dimension must split into p={p} equal blocks, "
            f"got shape {tuple(input.shape)}"
        )
    if output.shape != input.shape or output.dtype != input.dtype:
        raise ValueError(
            f"{what}: output must match input's shape and dtype, got {tuple(output.shape)} "
            f"{output.dtype} for input {tuple(input.shape)} {input.dtype}"
        )


@reference_impl(record="alltoall", variant="pairwise")
def pairwise_alltoall(
    output: torch.Tensor, input: torch.Tensor, group: dist.ProcessGroup | None = None
) -> None:
    """Scatter ``input``'s p blocks (along dim 0) to the ranks and gather theirs into ``output``.

    Like ``dist.all_to_all_single(output, input)`` with equal splits: block i of ``output`` is
    block r of rank i's ``input``. ``output`` must have ``input``'s shape and dtype; any dtype.
    """
    require_process_group(group, "pairwise_alltoall")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    _check_shapes(output, input, p)
    check_same_layout(input, group, "pairwise_alltoall")  # no-op unless COMMATLAS_CHECKS=1
    if input.numel() == 0:
        return
    if output.untyped_storage().data_ptr() == input.untyped_storage().data_ptr():
        input = input.clone()  # blocks still to be sent would be overwritten by received ones
    send = input.reshape(p, -1).contiguous()  # a copy only when input is not contiguous
    recv = output.view(p, -1) if output.is_contiguous() else torch.empty_like(send)
    recv[r].copy_(send[r])
    for step in range(1, p):
        dst, src = (r + step) % p, (r - step) % p
        exchange(send[dst], dst, recv[src], src, group)
    if not output.is_contiguous():
        output.copy_(recv.view(output.shape))
