"""Predict one training iteration: workload x cluster x method -> time, throughput, efficiency.

The pieces: the workload's gradients with their ready times (costmodels.workloads), the time of
one message under the method's architecture, collective and compression (cost models), and the
schedule that orders the messages against backward and the next forward (costmodels.schedules).

Cluster model (costmodels/dp/cluster.py): ``nodes`` x ``gpus_per_node`` ranks. The default
all-reduce, ``nccl``, is NCCL as it runs (costmodels.nccl: rings and trees over every NIC of a
node, NVLS, protocols, its tuner's choice per message). The textbook algorithms stay selectable:
inside a node their links are (alpha_intra, beta_intra), between nodes (alpha, beta); those that
know about the hierarchy (hierarchical, torus2d) use both, the flat ones (ring, trees,
recursive, parameter server, compression exchanges) run at the speed of the slowest link they
cross: the inter-node link (one GPU's share of the network) as soon as there are two nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import costmodels
from costmodels.dp import ps_pipeline, ps_pull_queue
from costmodels.dp.cluster import (
    ALLREDUCE_CHOICES,
    Cluster,
    nccl_allreduce_seconds,
    nccl_effective_link,
)
from costmodels.dp.collective_time import allreduce_time
from costmodels.dp.compression_cost import kernel_memory_bandwidth
from costmodels.dp.compression_exchange import exchange_time
from costmodels.schedules import simulate
from costmodels.schedules.fixed_costs import FixedCosts
from costmodels.schedules.result import IterationResult
from costmodels.workloads import Workload

Architecture = Literal["allreduce", "ps"]
SCHEDULE_NAMES = ("bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler", "local-sgd")


@dataclass(frozen=True)
class Method:
    """How gradients are exchanged: architecture x collective x schedule x compression."""

    architecture: Architecture = "allreduce"
    schedule: str = "wfbp"
    collective: str = "nccl"  # NCCL's own choice (costmodels.nccl); or a textbook algorithm
    ps_servers: int | None = None  # default: one per node
    ps_placement: Literal["separate", "colocated"] = "separate"
    compression: str = "none"
    fusion_threshold_bytes: float = 64 * 2**20  # Horovod's default fusion buffer
    partition_bytes: float = 4 * 2**20  # ByteScheduler / BytePS partition size
    local_sgd_period: int = 8
    # Fixed costs of the framework that runs the schedule, apart from comm (meanings in
    # costmodels.schedules.fixed_costs; presets with their sources in
    # costmodels.schedules.frameworks). The defaults add nothing, so a plain Method is the
    # network alone.
    message_overhead_s: float = 0.0  # per message: launch, bucket copies, bookkeeping
    cycle_time_s: float = 0.0  # Horovod's HOROVOD_CYCLE_TIME; fuses per cycle up to the threshold
    first_bucket_bytes: float | None = None  # PyTorch DDP's smaller first bucket (fusion)
    credit_bytes: float | None = None  # ByteScheduler's credit; None: one partition in flight
    forward_overlap: bool = True  # ByteScheduler overlaps the next forward; BytePS's own does not
    plan_alpha_s: float | None = None  # MG-WFBP plans with plan_alpha_s + plan_beta * n ...
    plan_beta_s_per_byte: float | None = None  # ... when both are given (its own fit)
    plan_greedy: bool = False  # with the plan's alpha-beta: the authors' greedy merge rule
    ps_partition_bytes: float | None = None  # BytePS: partitioned, pipelined push/pull
    overlap: float = 1.0  # share of the stream's speed left while backward computes

    def __post_init__(self) -> None:
        if self.architecture not in ("allreduce", "ps"):
            raise ValueError(f"architecture must be 'allreduce' or 'ps', got {self.architecture!r}")
        if self.schedule not in SCHEDULE_NAMES:
            raise ValueError(f"schedule must be one of {SCHEDULE_NAMES}, got {self.schedule!r}")
        if self.architecture == "allreduce" and self.collective not in ALLREDUCE_CHOICES:
            raise ValueError(
                f"collective must be one of {list(ALLREDUCE_CHOICES)}, got {self.collective!r}"
            )
        if self.ps_placement not in ("separate", "colocated"):
            raise ValueError(f"ps_placement must be separate or colocated: {self.ps_placement!r}")
        for name in ("message_overhead_s", "cycle_time_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value < math.inf):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        for name in ("first_bucket_bytes", "credit_bytes", "ps_partition_bytes"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} must be > 0 bytes or None, got {value!r}")
        plan = (self.plan_alpha_s, self.plan_beta_s_per_byte)
        if (plan[0] is None) != (plan[1] is None) or any(
            v is not None and not (isinstance(v, int | float) and 0 <= v < math.inf) for v in plan
        ):
            raise ValueError(
                f"plan_alpha_s and plan_beta_s_per_byte: both >= 0 or both None: {plan}"
            )
        if not (isinstance(self.overlap, int | float) and 0 <= self.overlap <= 1):
            raise ValueError(f"overlap must be in [0, 1], got {self.overlap!r}")

    @property
    def label(self) -> str:
        where = (
            self.collective
            if self.architecture == "allreduce"
            else f"ps-{self.ps_placement}" + (f"x{self.ps_servers}" if self.ps_servers else "")
        )
        squeeze = "" if self.compression == "none" else f"+{self.compression}"
        return f"{self.schedule}/{where}{squeeze}"

    def fixed_costs(self, cluster: Cluster | None = None) -> FixedCosts:
        """The schedule's fixed costs; with ``cluster``, BytePS's pipeline delivery latency."""
        delivery = None
        if cluster is not None and self._ps_pipelined(cluster):
            link = cluster.node_values()  # a worker machine pushes through all its NICs
            partition = float(self.ps_partition_bytes)  # type: ignore[arg-type]

            def delivery(nbytes: float) -> float:
                return ps_pipeline.delivery_seconds(
                    nbytes, cluster.nodes, cluster.gpus_per_node, partition, link
                )

        return FixedCosts(
            message_s=self.message_overhead_s,
            cycle_s=self.cycle_time_s,
            cycle_fusion_bytes=self.fusion_threshold_bytes,
            delivery=delivery,
            overlap=self.overlap,
        )

    def schedule_options(self, cluster: Cluster | None = None) -> dict[str, Any]:
        """Keyword options of the schedule (costmodels.schedules.simulate), fixed costs included."""
        options: dict[str, Any] = {
            "fusion": {
                "threshold_bytes": self.fusion_threshold_bytes,
                "first_bucket_bytes": self.first_bucket_bytes,
            },
            "bytescheduler": {
                "partition_bytes": self.partition_bytes,
                "credit_bytes": self.credit_bytes,
                "forward_overlap": self.forward_overlap,
            },
            "local-sgd": {"H": self.local_sgd_period},
        }.get(self.schedule, {})
        if self.schedule == "mg-wfbp" and self.plan_alpha_s is not None:
            alpha, beta = self.plan_alpha_s, float(self.plan_beta_s_per_byte)  # type: ignore[arg-type]
            options = {"plan_comm": lambda nbytes: alpha + beta * nbytes if nbytes > 0 else 0.0}
            if self.plan_greedy:  # costmodels.schedules.mg_wfbp_shi
                options = {"greedy_alpha_beta": (alpha, beta)}
        return {**options, "costs": self.fixed_costs(cluster)}

    def _ps_pipelined(self, cluster: Cluster) -> bool:
        return (
            self.architecture == "ps"
            and self.ps_partition_bytes is not None
            and self.compression == "none"
        )


def exchange_link(method: Method, cluster: Cluster) -> tuple[float, float]:
    """(alpha, beta) a compressed payload travels on: the flat link of ``cluster.values()``, or
    under an NCCL all-reduce the ring that matches NCCL's bus bandwidth (nccl_effective_link)."""
    if method.architecture == "allreduce" and method.collective.startswith("nccl"):
        return nccl_effective_link(cluster, method.collective)
    values = cluster.values()
    return values["alpha"], values["beta"]


def message_seconds(method: Method, cluster: Cluster, nbytes: float) -> float:
    """Seconds to exchange one gradient message of ``nbytes`` (fp32) among all ranks."""
    values = cluster.values()
    p = cluster.p
    if p == 1 or nbytes <= 0:
        return 0.0
    if method.compression != "none":
        alpha, beta = exchange_link(method, cluster)
        communication, compute = exchange_time(
            method.compression, nbytes, p, alpha, beta, values["gamma"],
            kernel_memory_bandwidth(cluster.gpu),  # kernels measured on the H200, scaled
        )  # fmt: skip
        return communication + compute
    if method.architecture == "allreduce":
        if method.collective.startswith("nccl"):
            return nccl_allreduce_seconds(cluster, nbytes, method.collective)
        return float(allreduce_time(method.collective, n=nbytes, **values))
    if method._ps_pipelined(cluster):  # BytePS: the delivery latency comes with fixed_costs
        servers = method.ps_servers or cluster.nodes
        colocated = method.ps_placement == "colocated"
        if colocated and servers > cluster.nodes:
            raise ValueError(
                f"colocated parameter servers need ps_servers <= {cluster.nodes} nodes"
            )
        return ps_pipeline.stream_seconds(
            nbytes, cluster.nodes, cluster.gpus_per_node, servers, colocated, cluster.node_values()
        )
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
    node = cluster.node_values()  # each worker machine pushes and pulls through all its NICs
    network = dict(alpha=node["alpha"], beta=node["beta"])
    if workers == 1:
        # One worker machine has nobody to synchronise with: the local reduction is the whole
        # exchange (Shi et al.'s 4-GPU BytePS rows imply ~5 GB/s, faster than their 10GbE).
        return local
    model = costmodels.get("parameter-server")
    remote = model.evaluate(
        method.ps_placement, p=workers, S=servers, n=nbytes, gamma=values["gamma"], **network
    )
    return local + float(remote)


def _ps_queued(method: Method, cluster: Cluster) -> bool:
    """BytePS BSP or WFBP on several machines, no other framework costs: priced partition by
    partition (costmodels.dp.ps_pull_queue); the rest keep the stream + delivery pipeline."""
    plain = method.message_overhead_s == 0 and method.cycle_time_s == 0
    return method._ps_pipelined(cluster) and cluster.nodes > 1 and plain and method.schedule in (
        "bsp", "wfbp")  # fmt: skip


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
    if comm is None and _ps_queued(method, cluster):  # costmodels.dp.ps_pull_queue
        result = ps_pull_queue.iteration(
            method.schedule, gradients, forward, backward, method.ps_partition_bytes or 0.0,
            cluster.nodes, cluster.gpus_per_node, method.ps_servers or cluster.nodes,
            method.ps_placement == "colocated", cluster.node_values(), method.overlap,
        )  # fmt: skip
    else:
        exchange = comm or (lambda nbytes: message_seconds(method, cluster, nbytes))
        result = simulate(method.schedule, gradients, forward, backward, exchange,
                          **method.schedule_options(cluster))  # fmt: skip
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
