"""A ring's local copies: the work of a step that moves nothing across the fabric.

Seconds per byte of n (nccl-tests' size) added to a ring's link time in the realised view only;
NCCL's tuner (its own view, the choice) has neither.

**P2P read on A100 (Simple).** NCCL 2.8.3 enables P2P read between two compute-capability 8.0
GPUs joined by NVLink (src/graph/paths.cc lines 293-294, ncclTopoCheckP2p) and then keeps the
Simple protocol's buffer on the sender (src/transport/p2p.cc lines 240-241: "For P2P Read the
SIMPLE buffer is local"; lines 264-265: the receiver's copy of the pointer is remote). So a
ring's step 0, where a rank pushes its own chunk (all_gather.h line 45-52 directSend /
directCopySend, reduce_scatter.h line 49 and all_reduce.h line 50 send), copies the chunk from
the user's buffer into the rank's own buffer in its own memory; the next GPU pulls it over
NVLink in its following step (kernel line numbers at tag v2.8.3-1). Every other step of the
loop receives (reads the previous GPU's buffer over NVLink). One thread block runs a channel's
steps in order, so while a rank does step 0 its incoming link carries nothing for that channel:
per loop a rank spends p - 1 link steps (2(p - 1) for all-reduce) and one local copy of the
same chunk. The channels of a GPU start together and move alike, so they copy at once and share
the GPU's copy rate (an assumption). Summed over the loops, the local copies move n/p bytes per
rank, read from and written to the GPU's memory:

    t_local = touches x n / (p x memory bandwidth x COPY_SHARE_OF_PEAK)

with touches 2 (read the input, write the own buffer: reduce-scatter, all-reduce, in-place
all-gather) or 3 for the out-of-place all-gather, whose directCopySend also writes the rank's
own slot of the output. The copy share is the share of peak a device copy achieves counting
bytes read and written (constants.COPY_SHARE_OF_PEAK, 0.871, from H200; an A100 copies at 1,355
of its 1,555 GB/s, 0.871 too: PTsolvers/gpu-workshop-JuliaCon23 scripts/perftest.jl at 3898805,
its "memory copy" reference on an A100 with read and written bytes counted, and that repository's
issue 7, where its author calls 1,355 the measured memcopy rate against 1.55 TB/s announced).
With it the realised Simple ring on A100 runs at the link's 240 GB/s and drops NCCL's 235 GB/s
ceiling (tuning.cc 2.7.5-2.17.1, kept in NCCL's view): a ring all-reduce then reaches
1.75 / (1.75 / 240 + 2 / (8 x 0.871 x 1,555)) = 234.1 GB/s busbw, NCCL's ceiling within 0.4%,
while reduce-scatter reaches 228.4 and the out-of-place all-gather 223.1 (the shipped superbench
8 x A100 logs at 8 GiB: 235.3, 231.5, 223.4). Issue 40, superbench from 1 MiB: all-gather
10.2 -> 8.4%, reduce-scatter 9.1 -> 7.6%, all-reduce 2.5 -> 2.4%; nothing else moves.
LL and LL128 do not use P2P read (Simple only) and keep the ceiling; several nodes, other GPUs
and P2P write (where the last step, not the first, is the local one) are not priced here
(issue 40: priced alike on one node of any GPU, the Azure GB200 ring log would go from 9.2 to
6.9%, the others unchanged; left for a reading of the newer kernels).

**Out-of-place all-gather elsewhere** (:func:`own_block_copy`): other GPUs write over the link
in step 0 and store the rank's own block into its output on the way, n / (p x memory x share).
"""

from __future__ import annotations

from costmodels.nccl import constants as K
from costmodels.nccl.system import NcclSystem

RING_OPS = ("all-reduce", "all-gather", "reduce-scatter")


def p2p_read_step(op: str, protocol: str, system: NcclSystem) -> float:
    """Seconds per byte of n of step 0's local copies under P2P read (module text); 0 where
    NCCL does not read (not an A100 preset on one node, not Simple) and in NCCL's own view."""
    if (system.tuner_view or not system.memory_Bps or system.arch != "ampere"
            or system.fabric.estimate or system.nodes != 1 or protocol != "simple"
            or op not in RING_OPS):  # fmt: skip
        return 0.0
    touches = 3.0 if op == "all-gather" else 2.0
    return touches / (system.p * system.memory_Bps * K.COPY_SHARE_OF_PEAK)


def own_block_copy(op: str, system: NcclSystem) -> float:
    """Seconds per byte of n that an out-of-place ring all-gather spends copying the rank's own
    block into its output (0 for the other operations and in NCCL's own view, which leaves it out).

    The ring all-gather's first step (src/device/all_gather.h runRing, NCCL 2.10 to 2.30) sends
    the rank's n/p bytes to the next GPU and, out of place, also stores them into the rank's own
    output slot (directCopySend; in place it only sends). The same threads do both, so the local
    store of n/p bytes adds n / (p x memory bandwidth x copy share) to the call. The model prices
    nccl-tests' out-of-place column (the one the project reads) and torch's
    all_gather_into_tensor, which is out of place."""
    if op != "all-gather" or system.tuner_view or not system.memory_Bps:
        return 0.0
    return 1.0 / (system.p * system.memory_Bps * K.COPY_SHARE_OF_PEAK)
