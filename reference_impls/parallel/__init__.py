"""Sharding and model parallelism: ZeRO, Megatron TP, GPipe/1F1B, sequence-parallel attention.

Minimal versions (picotron style) whose gradients equal single-process training; every byte
between ranks goes through :mod:`reference_impls.comm.wire` via the reference collectives.
"""

from reference_impls.parallel._sequence import dense_attention, shard_sequence
from reference_impls.parallel.pipeline import (
    PipelineResult,
    gpipe_schedule,
    gpipe_step,
    one_f_one_b_schedule,
    one_f_one_b_step,
    run_schedule,
)
from reference_impls.parallel.ring_attention import ring_attention
from reference_impls.parallel.tensor_parallel import (
    ColumnParallelLinear,
    CopyToTensorParallel,
    ParallelMLP,
    ReduceFromTensorParallel,
    RowParallelLinear,
)
from reference_impls.parallel.ulysses import ulysses_attention
from reference_impls.parallel.zero import ZeroOptimizer

__all__ = [
    "ColumnParallelLinear",
    "CopyToTensorParallel",
    "ParallelMLP",
    "PipelineResult",
    "ReduceFromTensorParallel",
    "RowParallelLinear",
    "ZeroOptimizer",
    "dense_attention",
    "gpipe_schedule",
    "gpipe_step",
    "one_f_one_b_schedule",
    "one_f_one_b_step",
    "ring_attention",
    "run_schedule",
    "shard_sequence",
    "ulysses_attention",
]
