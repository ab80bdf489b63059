"""Parameter-server push/pull with S server shards, servers separate or colocated (BSP).

Paper: M. Li, D. G. Andersen, J. W. Park, A. J. Smola, A. Ahmed, V. Josifovski, J. Long,
E. J. Shekita and B.-Y. Su, "Scaling distributed machine learning with the parameter server",
OSDI 2014. Placements as compared by Y. Jiang et al. (BytePS), OSDI 2020.

Algorithm (one synchronous iteration; the model of n bytes is split into S shards):

1. Push: every worker sends shard j of its gradient to server j.
2. Sum: server j adds the p contributions of shard j.
3. Pull: every worker receives every summed shard from its server.

Placement ``"separate"``: the last S ranks of the group are servers, the first p = W - S are
workers; a worker sends n bytes, a server sends p*n/S. Placement ``"colocated"``: all W ranks are
workers and ranks 0..S-1 also host shard j = rank; a host keeps its own shard local and sends
n + (p-2)*n/S bytes, a plain worker n. Cost model ``parameter-server`` (variants ``separate``
and ``colocated``). A server here only sums: the optimizer step stays on the workers.

Example (4 processes, 1 server machine, 3 workers)::

    ps_push_pull(grad, num_servers=1, placement="separate")   # workers' grad becomes the sum
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.distributed as dist

from reference_impls.comm.checks import check_same_layout, require_process_group
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl

Placement = Literal["separate", "colocated"]


def ps_roles(world_size: int, num_servers: int, placement: Placement) -> tuple[int, list[int]]:
    """Return (number of workers, server rank of each shard); raises for impossible layouts."""
    if placement not in ("separate", "colocated"):
        raise ValueError(f"placement must be 'separate' or 'colocated', got {placement!r}")
    if not isinstance(num_servers, int) or num_servers < 1:
        raise ValueError(f"num_servers must be a positive int, got {num_servers!r}")
    if placement == "separate":
        if num_servers >= world_size:
            raise ValueError(
                f"num_servers={num_servers} leaves no worker in a group of {world_size} ranks"
            )
        workers = world_size - num_servers
        return workers, list(range(workers, world_size))
    if num_servers > world_size:
        raise ValueError(f"colocated: num_servers={num_servers} > group size {world_size}")
    return world_size, list(range(num_servers))


def _as_flat(tensor: torch.Tensor) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError("ps_push_pull: tensor must be a floating-point torch.Tensor")
    return tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()


def _serve_push(shard: torch.Tensor, remote: list[int], own_share: bool, group) -> list:
    """Receive every remote worker's contribution, sum into ``shard``, start the pull sends.

    Returns the pending sends; the caller waits on them only after posting its own receives, so
    no rank ever blocks on a send whose receiver has not yet reached its receive.
    """
    buffers = [torch.empty_like(shard) for _ in remote]
    wait_all([irecv(buf, w, group) for buf, w in zip(buffers, remote, strict=True)])
    if not own_share:  # a dedicated server holds no gradient of its own
        shard.zero_()
    for buf in buffers:
        shard.add_(buf)
    return [isend(shard, w, group) for w in remote]


@reference_impl
def ps_push_pull(
    tensor: torch.Tensor,
    num_servers: int = 1,
    placement: Placement = "separate",
    group: dist.ProcessGroup | None = None,
) -> None:
    """Sum ``tensor`` over the workers through S parameter-server shards, in place.

    On workers the tensor becomes the sum of all workers' tensors (like ``dist.all_reduce`` over
    the workers). On a separate server rank only its own shard is written (the sum); the other
    elements are left as they were.
    """
    flat = _as_flat(tensor)
    require_process_group(group, "ps_push_pull")
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    p, servers = ps_roles(world, num_servers, placement)
    check_same_layout(tensor, group, "ps_push_pull")  # no-op unless COMMATLAS_CHECKS=1
    shards = list(flat.tensor_split(len(servers)))
    is_worker = rank < p
    my_shard = servers.index(rank) if rank in servers else None

    remote_servers = [(j, s) for j, s in enumerate(servers) if s != rank]
    # 1. Push (non-blocking): every worker starts sending its shards.
    pushes = [isend(shards[j], s, group) for j, s in remote_servers] if is_worker else []
    # 2. Sum: each server waits for its shard's contributions and starts the pull sends.
    pulls_out = []
    if my_shard is not None:
        remote_workers = [w for w in range(p) if w != rank]
        pulls_out = _serve_push(shards[my_shard], remote_workers, is_worker, group)
    # 3. Pull: the push buffers are reused as receive buffers once the pushes are done.
    wait_all(pushes)
    pulls_in = [irecv(shards[j], s, group) for j, s in remote_servers] if is_worker else []
    wait_all(pulls_out + pulls_in)
    if not tensor.is_contiguous():
        tensor.copy_(flat.view(tensor.shape))
