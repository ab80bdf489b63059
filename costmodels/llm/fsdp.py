"""ZeRO-3 / FSDP2 as it runs: per-block all-gathers and reduce-scatters on their own stream,
overlapped with the blocks' compute where the blocks are long enough.

FSDP2 (PyTorch ``fully_shard``, one call per transformer block plus one for the root module, as
torchtitan applies it; Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data
Parallel", arXiv:2304.11277, 2023, for the overlap, prefetch and hybrid-sharding design) and
DeepSpeed ZeRO-3 (Rajbhandari et al., SC'20) keep each rank's 1/N shard of every parameter and,
for one micro-batch on one pipeline stage:

1. forward: the root module's all-gather (embedding, final norm, output layer: their parameters
   are gathered before the first block and kept until the backward), then per block i an
   all-gather AG_i on the communication stream and its forward F_i on the compute stream.
   F_i starts when AG_i is done and F_{i-1} is done; AG_i starts when AG_{i-1} is done and, with
   ``prefetch`` p blocks gathered ahead (FSDP2: 1), when F_{i-1-p} has finished (its unsharded
   buffer is freed: at most p + 1 blocks are gathered at once);
2. backward, blocks in reverse: with ``reshard_after_forward`` (FSDP2's default) each block is
   all-gathered again (the last block, which "FSDP would prefetch immediately", is kept, as
   torchtitan configures it), issued while the next-later block's backward runs; after B_j its
   gradients are reduce-scattered (RS_j; HSDP: then all-reduced across the replica groups). The
   all-gathers and reduce-scatters share the GPU's links, so they queue on one network resource
   in the order they are issued;
3. the root module's gradients are reduce-scattered after the last backward kernel.

The micro-batch's time is the simulated end of its last operation; what exceeds the compute is
exposed communication: the first all-gather always, and every block whose all-gather (or
all-gather + reduce-scatter) takes longer than its compute. That happens when a block's compute
is short: a small micro-batch, or many GPUs at a fixed global batch (fewer tokens per GPU, the
same bytes per block), which is why ZeRO-3 throughput falls as GPUs are added at a fixed
global batch (tests/costmodels/test_llm_fsdp.py holds the mechanism).

Blocks are described by their kind (dense / MoE) in layer order: runs of identical blocks, so
the simulation is O(blocks) with a few float operations each. Every all-gather and reduce-
scatter time comes from the NCCL model over the sharding group (HSDP: the shard group; its
replicas add an all-reduce of the 1/shard part).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One block's compute and communication on one GPU for one micro-batch (seconds)."""

    forward_s: float
    backward_s: float
    gather_s: float  # all-gather of the block's parameters
    reduce_s: float  # reduce-scatter of its gradients (+ the HSDP all-reduce)


@dataclass(frozen=True)
class FsdpTimes:
    """One micro-batch on one stage: compute, communication and what of it is exposed."""

    total_s: float
    compute_s: float
    communication_s: float

    @property
    def exposed_s(self) -> float:
        return max(0.0, self.total_s - self.compute_s)

    @property
    def hidden_s(self) -> float:
        return max(0.0, self.communication_s - self.exposed_s)


def simulate_microbatch(
    blocks: list[Block],
    root: Block,
    *,
    prefetch: int = 1,
    reshard_after_forward: bool = True,
) -> FsdpTimes:
    """Event times of one micro-batch (module docstring). ``root`` is the root module: its
    all-gather comes first, its compute (embedding and head) runs after the last block's
    forward and before the last block's backward, its reduce-scatter comes last."""
    n = len(blocks)
    net = compute = root.gather_s  # the root all-gather runs alone before any compute
    f_end: list[float] = []
    for i, block in enumerate(blocks):
        start = net if i <= prefetch else max(net, f_end[i - 1 - prefetch])
        net = start + block.gather_s
        compute = max(compute, net) + block.forward_s
        f_end.append(compute)
    compute += root.forward_s + root.backward_s
    regather = reshard_after_forward and n > 1
    ready = {n - 1: 0.0} if n else {}  # the last block stays gathered for its backward
    for j in range(n - 1, -1, -1):
        if regather and j not in ready:  # not prefetched: gathered at its own pre-backward
            net = max(net, compute) + blocks[j].gather_s
            ready[j] = net
        start = max(compute, ready[j] if regather else 0.0)
        for k in range(j - 1, max(-1, j - 1 - prefetch), -1):  # backward prefetch
            if regather and k not in ready:
                net = max(net, start) + blocks[k].gather_s
                ready[k] = net
        compute = start + blocks[j].backward_s
        net = max(net, compute) + blocks[j].reduce_s
    end = max(compute, net) + root.reduce_s
    work = sum(b.forward_s + b.backward_s for b in blocks) + root.forward_s + root.backward_s
    gathers = sum(b.gather_s for b in blocks)
    if regather:
        gathers += gathers - blocks[-1].gather_s
    comm = root.gather_s + root.reduce_s + gathers + sum(b.reduce_s for b in blocks)
    return FsdpTimes(end, work, comm)
