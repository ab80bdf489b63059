"""How many prefill GPUs per decode GPU a request mix needs (disaggregated serving).

A request of class i costs the prefill pool ``prefill_s_i x G_p`` GPU-seconds (one prompt pass
on an instance of G_p GPUs) and the decode pool ``output_i x tpot_i x G_d / B`` GPU-seconds
(``output_i`` steps on an instance of G_d GPUs that advances B requests per step). At a request
rate lambda split by shares w_i, the two pools keep up exactly when their GPU counts stand in
the ratio of the work they receive::

    N_p / N_d = sum_i w_i prefill_s_i G_p / sum_i w_i output_i tpot_i G_d / B

This is the balance DistServe (Zhong et al., OSDI '24, Sec. 4) and Splitwise (Patel et al.,
ISCA '24, Sec. 5) provision pools for, without their latency targets or queueing (a pool run
near 100 % load queues without bound): provision above it for headroom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from costmodels.limits import check_items


@dataclass(frozen=True)
class RequestCost:
    """One request class: its share of requests and what one request costs each pool."""

    share: float
    prefill_s: float  # one prompt pass on a prefill instance
    output_len: int
    tpot_s: float  # one decode step of the decode batch
    batch: int

    def __post_init__(self) -> None:
        if not (self.share >= 0 and self.prefill_s >= 0 and self.tpot_s > 0):
            raise ValueError("share and prefill_s must be >= 0 and tpot_s > 0")
        if self.output_len < 1 or self.batch < 1:
            raise ValueError("output_len and batch must be >= 1")


def prefill_gpu_seconds(cost: RequestCost, prefill_gpus: int) -> float:
    return cost.prefill_s * prefill_gpus


def decode_gpu_seconds(cost: RequestCost, decode_gpus: int) -> float:
    return cost.output_len * cost.tpot_s * decode_gpus / cost.batch


def prefill_decode_ratio(mix: Sequence[RequestCost], prefill_gpus: int, decode_gpus: int) -> float:
    """N_p / N_d that balances the pools for ``mix`` (module docstring); shares need not sum
    to one."""
    check_items(list(mix), "request mix")
    prefill = sum(c.share * prefill_gpu_seconds(c, prefill_gpus) for c in mix)
    decode = sum(c.share * decode_gpu_seconds(c, decode_gpus) for c in mix)
    if decode <= 0:
        raise ValueError("request mix: every share is zero")
    return prefill / decode


def pool_capacity(instances: int, seconds_per_request: float) -> float:
    """Requests per second ``instances`` sustain when each takes ``seconds_per_request``."""
    return instances / seconds_per_request if seconds_per_request > 0 else float("inf")
