"""Predict one training iteration: workload x cluster x method -> time, throughput, efficiency.

The pieces: the workload's gradients with their ready times (costmodels.workloads), the time of
one message under the method's architecture, collective and compression (cost models), and the
schedule that orders the messages against backward and the next forward (costmodels.schedules).

Cluster model: ``nodes`` x ``gpus_per_node`` ranks; inside a node links are (alpha_intra,
beta_intra), between nodes (alpha, beta). Algorithms that know about the hierarchy
(hierarchical, torus2d) use both; the flat ones (ring, trees, recursive, parameter server,
compression exchanges) run at the speed of the slowest link they cross: the inter-node link as
soon as there are two nodes, the intra-node link on one node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import costmodels
from costmodels.collective_time import ALLREDUCE_ALGORITHMS, allreduce_time
from costmodels.compression_exchange import exchange_time
from costmodels.schedules import simulate
from costmodels.schedules.result import IterationResult
from costmodels.workloads import Workload

Architecture = Literal["allreduce", "ps"]
SCHEDULE_NAMES = ("bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler", "local-sgd")


@dataclass(frozen=True)
class Cluster:
    """Nodes of identical GPUs; link speeds in SI units (bytes/s and seconds)."""

    nodes: int
    gpus_per_node: int
    intra_bandwidth_Bps: float
    intra_latency_s: float
    inter_bandwidth_Bps: float
    inter_latency_s: float
    reduction_Bps: float = float("inf")  # summation throughput; inf = free reduction

    def __post_init__(self) -> None:
        for name in ("nodes", "gpus_per_node"):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("intra_bandwidth_Bps", "inter_bandwidth_Bps", "reduction_Bps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("intra_latency_s", "inter_latency_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")

    @property
    def p(self) -> int:
        return self.nodes * self.gpus_per_node

    def values(self) -> dict[str, float]:
        """Cost-model symbol values; the flat alpha/beta are those of the slowest link used."""
        multi_node = self.nodes > 1
        return {
            "p": self.p,
            "g": self.gpus_per_node,
            "alpha": self.inter_latency_s if multi_node else self.intra_latency_s,
            "beta": 1 / (self.inter_bandwidth_Bps if multi_node else self.intra_bandwidth_Bps),
            "gamma": 1 / self.reduction_Bps,
            "alpha_intra": self.intra_latency_s,
            "beta_intra": 1 / self.intra_bandwidth_Bps,
        }


@dataclass(frozen=True)
class Method:
    """How gradients are exchanged: architecture x collective x schedule x compression."""

    architecture: Architecture = "allreduce"
    schedule: str = "wfbp"
    collective: str = "ring"
    ps_servers: int | None = None  # default: one per node
    ps_placement: Literal["separate", "colocated"] = "separate"
    compression: str = "none"
    fusion_threshold_bytes: float = 64 * 2**20  # Horovod's default fusion buffer
    partition_bytes: float = 4 * 2**20  # ByteScheduler / BytePS partition size
    local_sgd_period: int = 8

    def __post_init__(self) -> None:
        if self.architecture not in ("allreduce", "ps"):
            raise ValueError(f"architecture must be 'allreduce' or 'ps', got {self.architecture!r}")
        if self.schedule not in SCHEDULE_NAMES:
            raise ValueError(f"schedule must be one of {SCHEDULE_NAMES}, got {self.schedule!r}")
        if self.architecture == "allreduce" and self.collective not in ALLREDUCE_ALGORITHMS:
            raise ValueError(
                f"collective must be one of {list(ALLREDUCE_ALGORITHMS)}, got {self.collective!r}"
            )
        if self.ps_placement not in ("separate", "colocated"):
            raise ValueError(f"ps_placement must be separate or colocated: {self.ps_placement!r}")

    @property
    def label(self) -> str:
        where = (
            self.collective
            if self.architecture == "allreduce"
            else f"ps-{self.ps_placement}" + (f"x{self.ps_servers}" if self.ps_servers else "")
        )
        squeeze = "" if self.compression == "none" else f"+{self.compression}"
        return f"{self.schedule}/{where}{squeeze}"

    def schedule_options(self) -> dict[str, float]:
        return {
            "fusion": {"threshold_bytes": self.fusion_threshold_bytes},
            "bytescheduler": {"partition_bytes": self.partition_bytes},
            "local-sgd": {"H": self.local_sgd_period},
        }.get(self.schedule, {})


def message_seconds(method: Method, cluster: Cluster, nbytes: float) -> float:
    """Seconds to exchange one gradient message of ``nbytes`` (fp32) among all ranks."""
    values = cluster.values()
    p = cluster.p
    if p == 1 or nbytes <= 0:
        return 0.0
    if method.compression != "none":
        communication, compute = exchange_time(
            method.compression, nbytes, p, values["alpha"], values["beta"], values["gamma"]
        )
        return communication + compute
    if method.architecture == "allreduce":
        return float(allreduce_time(method.collective, n=nbytes, **values))
    return _parameter_server_seconds(method, cluster, nbytes, values)


def _parameter_server_seconds(
    method: Method, cluster: Cluster, nbytes: float, values: dict[str, float]
) -> float:
    """BytePS-style: GPUs of a node reduce-scatter locally, each node pushes/pulls its sum
    through the servers, then the node all-gathers (Jiang et al., OSDI 2020, Section 4.2)."""
    g, workers = cluster.gpus_per_node, cluster.nodes
    servers = method.ps_servers or cluster.nodes
    if method.ps_placement == "colocated" and servers > workers:
        raise ValueError(f"colocated parameter servers need ps_servers <= {workers} nodes")
    intra = dict(p=g, n=nbytes, alpha=cluster.intra_latency_s, beta=values["beta_intra"],
                 gamma=values["gamma"])  # fmt: skip
    local = 0.0
    if g > 1:
        local = float(costmodels.get("reduce-scatter").evaluate("ring", **intra))
        local += float(costmodels.get("allgather").evaluate("ring", **intra))
    network = dict(alpha=cluster.inter_latency_s, beta=1 / cluster.inter_bandwidth_Bps)
    if workers == 1:
        # One worker machine has nobody to synchronise with: the local reduction is the whole
        # exchange (Shi et al.'s 4-GPU BytePS rows imply ~5 GB/s, faster than their 10GbE).
        return local
    model = costmodels.get("parameter-server")
    remote = model.evaluate(
        method.ps_placement, p=workers, S=servers, n=nbytes, gamma=values["gamma"], **network
    )
    return local + float(remote)


@dataclass(frozen=True)
class Prediction:
    """The contract of ``commatlas predict --json`` (keys of :meth:`as_json`)."""

    method: str
    workers: int
    iteration_time_s: float
    throughput_samples_per_s: float
    scaling_efficiency: float
    compute_s: float
    communication_s: float
    exposed_communication_s: float
    result: IterationResult = field(repr=False, compare=False)

    def as_json(self) -> dict[str, float | int | str]:
        return {
            "method": self.method,
            "workers": self.workers,
            "iteration_time_s": self.iteration_time_s,
            "throughput_samples_per_s": self.throughput_samples_per_s,
            "scaling_efficiency": self.scaling_efficiency,
            "compute_s": self.compute_s,
            "communication_s": self.communication_s,
            "exposed_communication_s": self.exposed_communication_s,
        }


def split_step(workload: Workload, step_time_s: float) -> tuple[float, float]:
    """(forward, backward) seconds of a measured single-GPU step; measured ratio, else 1:2."""
    if not step_time_s > 0:
        raise ValueError(f"step_time_s must be positive, got {step_time_s!r}")
    profile = workload.profile("fp32")
    share = 1 / 3 if profile is None else profile.fwd_s / (profile.fwd_s + profile.bwd_s)
    return step_time_s * share, step_time_s * (1 - share)


def predict(
    workload: Workload,
    batch_size: int,
    step_time_s: float,
    cluster: Cluster,
    method: Method,
    *,
    comm: Callable[[float], float] | None = None,
) -> Prediction:
    """One iteration of data-parallel training of ``workload`` on ``cluster`` with ``method``.

    ``step_time_s`` is the measured single-GPU iteration time (forward + backward + update) at
    ``batch_size`` samples per GPU; the scaling efficiency is step_time_s / iteration time.
    ``comm`` replaces the per-message time (bytes -> seconds) of ``method`` on ``cluster``, for
    callers with an equal but faster function (the calculator's affine fast path).
    """
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    forward, backward = split_step(workload, step_time_s)
    gradients = workload.gradients(bytes_per_value=4, backward_s=backward)
    result = simulate(
        method.schedule,
        gradients,
        forward,
        backward,
        comm or (lambda nbytes: message_seconds(method, cluster, nbytes)),
        **method.schedule_options(),
    )
    iteration = result.iteration_time_s
    return Prediction(
        method=method.label,
        workers=cluster.p,
        iteration_time_s=iteration,
        throughput_samples_per_s=batch_size * cluster.p / iteration,
        scaling_efficiency=step_time_s / iteration,
        compute_s=result.compute_s,
        communication_s=result.communication_s,
        exposed_communication_s=result.exposed_communication_s,
        result=result,
    )
