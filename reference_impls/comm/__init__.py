"""The byte-counting point-to-point layer shared by all reference implementations."""

from reference_impls.comm.checks import check_same_layout, checks_enabled
from reference_impls.comm.wire import WireCounter, count_bytes, exchange, irecv, isend, wait_all

__all__ = [
    "WireCounter",
    "check_same_layout",
    "checks_enabled",
    "count_bytes",
    "exchange",
    "irecv",
    "isend",
    "wait_all",
]
