"""Memory a training process holds besides model states and activations: communication buffers
and the runtime (CUDA context, allocator reserve), and how much of a GPU's memory is usable.

- Usable memory: the driver keeps part of the HBM for itself; an H100 80GB HBM3 reports
  "81559MiB" of its 81,920 MiB (nvidia-smi output in several stored logs, e.g. the H100 and H800
  rows found with the search tool), so ``VISIBLE_FRACTION`` = 81559 / 81920 of the nominal size is
  what CUDA can allocate (measured on H100 and H800; used for every GPU, an estimate elsewhere).
- CUDA context: "the currently used ~300MB" for the driver and lazily loaded kernels since CUDA
  11.7 (ptrblck, pytorch/pytorch#107667); a training process also loads cuBLAS/cuDNN, flash and
  NCCL kernels and cuBLAS workspaces: ``CUDA_CONTEXT_BYTES`` = 0.75 GiB (ESTIMATE).
- NCCL: each communicator a rank belongs to (the TP, PP, CP, EP, DP groups of size > 1; HSDP
  has two DP communicators) holds its channels' send and receive buffers (NCCL_BUFFSIZE, 4 MiB
  for the Simple protocol, plus the LL and LL128 buffers, per channel and peer):
  ``NCCL_COMM_BYTES`` = 256 MiB per communicator (ESTIMATE, not verified in a stored source).
- Framework communication buffers (costmodels/llm/memory.py adds them): FSDP2's unsharded
  weights of the block computing and of the ``prefetch`` blocks gathered ahead (all of the
  stage's blocks without resharding after the forward), the unsharded gradients of the block
  being reduced and of the one before (bf16 + the reduce dtype), the root module's gathered
  weights; the sequence-parallel all-gather output; the pipeline's send/receive tensors; the
  expert-parallel dispatch and combine buffers.
- Allocator reserve: PyTorch's caching allocator keeps freed blocks (fragmentation between
  differently sized activations); ``allocator_fragmentation`` (a fitted constant,
  costmodels/llm/constants.py, on the dev memory data) times the dynamic memory (activations,
  working set and buffers).
"""

from __future__ import annotations

GIB = 2**30
VISIBLE_FRACTION = 81559 / 81920
CUDA_CONTEXT_BYTES = 0.75 * GIB  # ESTIMATE (module docstring)
NCCL_COMM_BYTES = 0.25 * GIB  # ESTIMATE per communicator (module docstring)


def usable_bytes(memory_bytes: float) -> float:
    """What CUDA can allocate of a GPU's nominal memory (module docstring)."""
    return memory_bytes * VISIBLE_FRACTION


def communicators(tp: int, pp: int, cp: int, ep: int, dp_groups: tuple[int, ...]) -> int:
    """NCCL communicators of size > 1 one rank belongs to."""
    return sum(1 for size in (tp, pp, cp, ep, *dp_groups) if size > 1)
