"""The byte-counting point-to-point layer shared by all reference implementations."""

from reference_impls.comm.wire import WireCounter, count_bytes, exchange, irecv, isend, wait_all

__all__ = ["WireCounter", "count_bytes", "exchange", "irecv", "isend", "wait_all"]
