"""Gradient compressors behind one interface, error feedback, the exchange and a DDP hook."""

from reference_impls.compression.base import Compressor
from reference_impls.compression.ddp_hook import ddp_comm_hook
from reference_impls.compression.error_feedback import ErrorFeedback
from reference_impls.compression.exchange import compressed_allreduce
from reference_impls.compression.topk import TopK

__all__ = ["Compressor", "ErrorFeedback", "TopK", "compressed_allreduce", "ddp_comm_hook"]
