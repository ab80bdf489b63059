"""Hierarchical all-reduce: reduce-scatter inside each node, all-reduce across nodes between
ranks of the same local index, all-gather inside each node.

Sources: Horovod's hierarchical all-reduce (github.com/horovod/horovod, pull request 411, 2018:
NCCL reduce-scatter, MPI all-reduce, NCCL all-gather) and M. Cho, U. Finkler, D. Kung and
H. Hunter, "BlueConnect: decomposing all-reduce for deep learning on heterogeneous network
hierarchy", MLSys 2019; ring phases as in P. Patarasuk and X. Yuan, J. Parallel Distrib. Comput.
69(2), 2009. The older two-level form of X. Jia et al. (arXiv:1807.11205, 2018) reduces to one
master rank per node instead and broadcasts back (cost model variant ``reduce-broadcast``, not
implemented here).

Algorithm (p ranks on p/g nodes of g = ``ranks_per_group`` consecutive ranks; local rank l):

1. Inside each node, a ring reduce-scatter over the g ranks: local rank l ends with the node's
   sum of chunk l of ``flat.tensor_split(g)``.
2. The p/g ranks with the same local rank l, one per node, ring all-reduce chunk l, so it holds
   the global sum. The g such rings run at the same time over different ranks.
3. Inside each node, a ring all-gather of the g finished chunks.

Communication cost (cost model ``hierarchical-allreduce``, variant ``reduce-scatter-ring``):
2 (g-1) alpha_intra + 2 (g-1)/g n beta_intra + 2 (p/g - 1) alpha + 2 (p/g - 1)/p n beta + the
additions; every rank sends 2 (g-1) messages inside its node and 2 (p/g - 1) across nodes.
Bytes sent by a rank: n - |chunk l| and n - |chunk l+1| inside the node, and a ring all-reduce
of chunk l, 2 (p/g - 1)/(p/g) |chunk l|, across nodes; that is 2 (g-1)/g n + 2 (p/g - 1)/p n
when p divides the element count.

The sub-groups come from :func:`reference_impls.collectives._subgroups.grid_subgroups` (rows are
nodes), created on the first call and cached; see there who must make that first call.

Example::

    from reference_impls.collectives import hierarchical_allreduce
    hierarchical_allreduce(grad, ranks_per_group=8)   # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from reference_impls.collectives._common import check_positive_int, flat_view, write_back
from reference_impls.collectives._subgroups import grid_subgroups
from reference_impls.collectives.ring import allgather_chunks, reduce_scatter_chunks, ring_allreduce
from reference_impls.registry import reference_impl


def two_level_allreduce(
    flat: torch.Tensor, inner: dist.ProcessGroup, outer: dist.ProcessGroup
) -> None:
    """Steps 1-3: reduce-scatter over ``inner``, all-reduce over ``outer``, all-gather."""
    local = dist.get_rank(inner)
    chunks = list(flat.tensor_split(dist.get_world_size(inner)))
    reduce_scatter_chunks(chunks, inner)
    ring_allreduce(chunks[local], outer)
    allgather_chunks(chunks, inner)


@reference_impl(record="hierarchical-allreduce", variant="reduce-scatter-ring")
def hierarchical_allreduce(
    tensor: torch.Tensor,
    group: dist.ProcessGroup | None = None,
    ranks_per_group: int | None = None,
) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    ``ranks_per_group``: ranks per node, g; must divide the group size. By default the
    ``LOCAL_WORLD_SIZE`` that torchrun sets, or the whole group (one node) without it.
    Any numel, the float dtypes; sums in the tensor's own dtype.
    """
    what = "hierarchical_allreduce"
    flat = flat_view(tensor, what, group)
    p = dist.get_world_size(group)
    if ranks_per_group is None:
        ranks_per_group = int(os.environ.get("LOCAL_WORLD_SIZE", p))
    check_positive_int(ranks_per_group, "ranks_per_group", what)
    if p % ranks_per_group != 0:
        raise ValueError(
            f"{what}: ranks_per_group={ranks_per_group} must divide the group size {p}"
        )
    if p == 1 or flat.numel() == 0:
        return
    inner, outer = grid_subgroups(group, cols=ranks_per_group)
    two_level_allreduce(flat, inner, outer)
    write_back(tensor, flat)
