"""Ring reduce-scatter, ring all-gather and ring all-reduce over point-to-point sends.

Paper: P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", J. Parallel Distrib. Comput. 69(2):117-124, 2009.

Algorithm (p ranks in a ring, rank r sends to r+1 and receives from r-1):

1. Split the flattened tensor into p chunks, ``flat.tensor_split(p)`` (sizes differ by at most
   one element, the larger ones first).
2. Reduce-scatter, p-1 steps: in step s rank r sends its running sum of chunk (r-s-1) mod p
   (its own chunk r-1 in step 0) and receives the running sum of chunk (r-s-2) mod p, which it
   adds into its own copy in place. After the last step rank r holds the complete sum of chunk
   r.
3. All-gather, p-1 steps: in step s rank r sends chunk (r-s) mod p and stores what it receives
   as chunk (r-s-1) mod p.
4. Pipelining (as in gloo's own ring): chunks travel in segments of ``SEGMENT_ELEMS``, and a
   rank passes each segment on as soon as it has it (added, in step 2), so consecutive steps
   overlap; the bytes are the same as without segments.

Communication cost: 2(p-1) steps per rank, each sending n/p bytes, so 2(p-1)alpha + 2(p-1)/p n beta
+ (p-1)/p n gamma (cost model ``ring-allreduce``); reduce-scatter and all-gather are each one
half of it (cost models ``reduce-scatter`` and ``allgather``, variant ``ring``). A rank sends
every chunk but its own in the reduce-scatter and every chunk but chunk r+1 in the all-gather,
so n - |chunk r| and n - |chunk r+1| bytes: (p-1)/p n each when p divides the element count.

Example::

    from reference_impls.collectives import ring_allreduce, ring_reduce_scatter
    ring_allreduce(grad)                  # in place, like dist.all_reduce(grad)
    mine = ring_reduce_scatter(grad)      # chunk r of grad.view(-1).tensor_split(p), summed
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._common import check_tensor, flat_view, write_back
from reference_impls.comm.checks import check_same_layout
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl

# Messages are cut into segments of this many elements (1 MiB of float32): large enough to keep
# per-message costs small, small enough that a segment can be added and passed on while the next
# one arrives, and that the receive scratch is two segments rather than a whole chunk.
SEGMENT_ELEMS = 1 << 18


def _segments(chunk: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return chunk.split(SEGMENT_ELEMS)


def reduce_scatter_chunks(chunks: list[torch.Tensor], group: dist.ProcessGroup | None) -> None:
    """Ring reduce-scatter phase, in place: afterwards ``chunks[r]`` holds the sum over ranks.

    The other chunks are left holding partial sums (the all-gather phase overwrites them).
    Every rank passes as many chunks as there are ranks, the same sizes on every rank. Segments
    are pipelined across steps: one is forwarded as soon as it has been added, so the steps of
    the ring overlap instead of waiting for whole chunks.
    """
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if p == 1 or chunks[0].numel() == 0:  # tensor_split puts the larger chunks first
        return
    right, left = (r + 1) % p, (r - 1) % p
    width = min(SEGMENT_ELEMS, chunks[0].numel())
    scratch = [chunks[0].new_empty(width), chunks[0].new_empty(width)]  # double buffer
    # Arrival order: step s brings the running sum of chunk r-s-2, which goes on to the right
    # in step s+1 once this rank's copy is added, except in the last step (chunk r is done).
    arrivals = [
        (segment, step < p - 2)
        for step in range(p - 1)
        for segment in _segments(chunks[(r - step - 2) % p])
    ]
    sends = [isend(segment, right, group) for segment in _segments(chunks[(r - 1) % p])]

    def receive(k: int):  # noqa: ANN202 (a work handle)
        return irecv(scratch[k % 2][: arrivals[k][0].numel()], left, group)

    pending = receive(0)
    for k, (target, forward) in enumerate(arrivals):
        following = receive(k + 1) if k + 1 < len(arrivals) else None  # lands while we add
        pending.wait()
        target.add_(scratch[k % 2][: target.numel()])
        if forward:
            sends.append(isend(target, right, group))
        pending = following
    wait_all(sends)  # the all-gather overwrites chunks that may still be on their way


def allgather_chunks(chunks: list[torch.Tensor], group: dist.ProcessGroup | None) -> None:
    """Ring all-gather phase: rank r owns ``chunks[r]``; afterwards every rank has all chunks.

    Step s receives chunk r-s-1 straight into place; each segment is forwarded to the right as
    soon as it has arrived (except in the last step), so the steps overlap.
    """
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if p == 1:
        return
    right, left = (r + 1) % p, (r - 1) % p
    arrivals = [
        (segment, step < p - 2)
        for step in range(p - 1)
        for segment in _segments(chunks[(r - step - 1) % p])
    ]
    receives = [irecv(segment, left, group) for segment, _ in arrivals]
    sends = [isend(segment, right, group) for segment in _segments(chunks[r])]
    for work, (segment, forward) in zip(receives, arrivals, strict=True):
        work.wait()
        if forward:
            sends.append(isend(segment, right, group))
    wait_all(sends)


@reference_impl(record="reduce-scatter", variant="ring")
def ring_reduce_scatter(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """Return this rank's chunk of the sum of ``tensor`` over all ranks of ``group``.

    The chunks are ``tensor.reshape(-1).tensor_split(p)``: rank r gets chunk r, whose size is
    ``ceil(numel / p)`` for the first ``numel % p`` ranks and ``floor(numel / p)`` for the rest
    (like ``dist.reduce_scatter_tensor`` when p divides numel, which torch requires). ``tensor``
    is left unchanged; the result is a new 1-D tensor of the same dtype and device.
    """
    check_tensor(tensor, "ring_reduce_scatter")
    check_same_layout(tensor, group, "ring_reduce_scatter")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    work = tensor.clone(memory_format=torch.contiguous_format).view(-1)  # the input stays as is
    chunks = list(work.tensor_split(p))
    reduce_scatter_chunks(chunks, group)
    return chunks[r].clone()  # not a view: the other chunks' memory is freed


@reference_impl(record="ring-allreduce", variant="ring")
def ring_allreduce(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    Works for any world size (including 1 and non powers of two), any numel (including 0 and
    numel < p) and the float dtypes; sums in the tensor's own dtype. It is
    :func:`ring_reduce_scatter` followed by a ring all-gather of the summed chunks.
    """
    flat = flat_view(tensor, "ring_allreduce", group)
    p = dist.get_world_size(group)
    if p == 1 or flat.numel() == 0:
        return
    chunks = list(flat.tensor_split(p))
    reduce_scatter_chunks(chunks, group)
    allgather_chunks(chunks, group)
    write_back(tensor, flat)


@reference_impl(record="allgather", variant="ring")
def ring_allgather(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Gather equal-shaped tensors from all ranks; returns shape ``(p, *tensor.shape)``.

    Like ``dist.all_gather_into_tensor``. p-1 steps, each rank forwards one block per step, so a
    rank sends (p-1) times its own tensor's bytes, (p-1)/p n of the n gathered bytes (cost model
    ``allgather``, variant ``ring``). Any dtype (indices travel this way too).
    """
    check_tensor(tensor, "ring_allgather", floats_only=False)
    check_same_layout(tensor, group, "ring_allgather")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    out = torch.empty((p, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    out[r].copy_(tensor)
    allgather_chunks(list(out.view(p, tensor.numel())), group)
    return out
