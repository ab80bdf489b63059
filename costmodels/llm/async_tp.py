"""Asynchronous tensor parallelism (``--async-tp``): TP collectives micro-pipelined with the GEMMs
they feed or drain.

With sequence parallelism a column-parallel GEMM waits for an all-gather of its input and a
row-parallel GEMM ends in a reduce-scatter (Korthikanti et al. 2022, Sec. 4.2.2). Async TP
(Wang et al., "Overlap Communication with Dependent Computation via Decomposition in Large Deep
Learning Models", ASPLOS 2023, doi:10.1145/3567955.3567959; PyTorch's SymmetricMemory
micro-pipelining as torchtitan enables it with ``--parallelism.enable_async_tensor_parallel``)
splits a fused pair into t steps: while the GEMM of one shard runs, the next shard moves. For
a collective of C seconds fused with GEMMs of G seconds the pair takes max(C, G) + min(C, G)/t,
so the exposed communication is

    exposed = max(0, C - G) + min(C, G) / t  +  extra

where ``extra`` is what the t smaller GEMMs cost beyond the whole one (tile and wave
quantisation of m / t rows, costmodels/llm/kernel_time.py ``tp_gemms``), and the overlapped
part still takes ``overlap_interference`` of its length from the compute (the copy engines and
SMs the transfers use). Which collective is fused with which GEMM, and which cannot be fused at
all (and stays whole), is costmodels/llm/tp_schedule.py: the pairing is per collective, so a
block whose GEMMs are short (the attention block's at small hidden sizes) hides less than its
MLP. Without async TP every TP collective is exposed (Megatron-LM's and torchtitan's vanilla
TP).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from costmodels.llm.kernel_time import LayerTimes
    from costmodels.llm.tp_schedule import TPCollective


def exposed_tp_seconds(
    comm_s: float, paired_gemm_s: float, tp: int, chunked_extra_s: float, interference: float
) -> float:
    """Exposed seconds of one collective fused with GEMMs of ``paired_gemm_s`` (docstring)."""
    if tp <= 1 or comm_s <= 0:
        return 0.0
    overlapped = min(comm_s, paired_gemm_s)
    hidden = overlapped * (1 - 1 / tp)
    return comm_s - hidden + interference * hidden + chunked_extra_s


def exposed_layer_tp(
    collectives: Sequence[TPCollective],
    seconds: Sequence[float],
    times: LayerTimes,
    tp: int,
    interference: float,
    moe: bool | None = None,
) -> float:
    """Exposed TP seconds of one layer and micro-batch under async TP: each collective (of
    ``seconds[i]``) against the GEMMs it is fused with; an unfused one is exposed whole. ``moe``:
    the layer's kind (only the collectives it runs count, tp_schedule.py; None: all)."""
    if tp <= 1:
        return 0.0
    exposed = 0.0
    for collective, comm_s in zip(collectives, seconds, strict=True):
        if not collective.runs_in(moe):
            continue
        if not collective.gemms:
            exposed += comm_s
            continue
        gemm = extra = 0.0
        for name, share in collective.gemms:
            g, e = times.tp_gemm(name)
            gemm, extra = gemm + share * g, extra + share * e
        exposed += exposed_tp_seconds(comm_s, gemm, tp, extra, interference) if gemm > 0 else comm_s
    return exposed
