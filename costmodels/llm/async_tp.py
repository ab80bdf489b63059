"""Asynchronous tensor parallelism (``--async-tp``): TP collectives overlapped with the GEMMs they
feed or drain.

With sequence parallelism each column-parallel GEMM waits for an all-gather of its input and
each row-parallel GEMM ends in a reduce-scatter (Korthikanti et al. 2022, Sec. 4.2.2). Async TP
(Wang et al., "Overlap Communication with Dependent Computation via Decomposition in Large Deep
Learning Models", ASPLOS 2023, doi:10.1145/3567955.3567959; PyTorch's SymmetricMemory
micro-pipelining as torchtitan enables it with ``--parallelism.enable_async_tensor_parallel``)
splits each pair into t steps: while the
GEMM of one shard runs, the next shard moves. For a layer with TP communication C and paired
GEMM time G (forward linears and their dgrads, costmodels/llm/kernel_time.py) the pair takes
max(C, G) + min(C, G) / t, so the exposed communication is

    exposed = max(0, C - G) + min(C, G) / t  +  extra

where ``extra`` is what the t smaller GEMMs cost beyond the whole one (tile and wave
quantisation of m / t rows, ``LayerTimes.tp_chunked_extra_s``), and the overlapped part still
takes ``overlap_interference`` of its length from the compute (the copy engines and SMs the
transfers use). Without async TP the whole C is exposed (Megatron-LM's and torchtitan's vanilla
TP).
"""

from __future__ import annotations


def exposed_tp_seconds(
    comm_s: float, paired_gemm_s: float, tp: int, chunked_extra_s: float, interference: float
) -> float:
    """Exposed TP communication of one layer (module docstring), seconds."""
    if tp <= 1 or comm_s <= 0:
        return 0.0
    overlapped = min(comm_s, paired_gemm_s)
    hidden = overlapped * (1 - 1 / tp)
    return comm_s - hidden + interference * hidden + chunked_extra_s
