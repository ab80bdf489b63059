"""Gradient compressors behind one interface, error feedback, the exchange and a DDP hook.

``get(record_id, **config)`` builds any compressor; ``allreduce_compressed`` averages through it.
"""

from reference_impls.compression.adapters import aggregate_gradients
from reference_impls.compression.base import Aggregated, Compressor
from reference_impls.compression.catalog import available, factories, get, register_compressor
from reference_impls.compression.ddp_hook import ddp_comm_hook
from reference_impls.compression.error_feedback import ErrorFeedback
from reference_impls.compression.exchange import allreduce_compressed
from reference_impls.compression.topk import TopK

__all__ = [
    "Aggregated",
    "Compressor",
    "ErrorFeedback",
    "TopK",
    "aggregate_gradients",
    "allreduce_compressed",
    "available",
    "ddp_comm_hook",
    "factories",
    "get",
    "register_compressor",
]
