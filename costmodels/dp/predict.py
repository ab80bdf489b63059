"""Predict one training iteration: workload x cluster x method -> time, throughput, efficiency.

The pieces: the workload's gradients with their ready times (costmodels.workloads), the time of
one message under the method's architecture, collective and compression (cost models), and the
schedule that orders the messages against backward and the next forward (costmodels.schedules).
The method itself (architecture, collective, schedule, compression, framework costs) is
costmodels.dp.method.Method, importable from here as before.

Cluster model (costmodels/dp/cluster.py): ``nodes`` x ``gpus_per_node`` ranks. The default
all-reduce, ``nccl``, is NCCL as it runs (costmodels.nccl: rings and trees over every NIC of a
node, NVLS, protocols, its tuner's choice per message). The textbook algorithms stay selectable:
inside a node their links are (alpha_intra, beta_intra), between nodes (alpha, beta); those that
know about the hierarchy (hierarchical, torus2d) use both, the flat ones (ring, trees,
recursive, parameter server, compression exchanges) run at the speed of the slowest link they
cross: the inter-node link (one GPU's share of the network) as soon as there are two nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import costmodels
from costmodels.dp import ps_pipeline, ps_pull_queue
from costmodels.dp.cluster import Cluster, nccl_allreduce_seconds, nccl_effective_link
from costmodels.dp.collective_time import allreduce_time
from costmodels.dp.compression_cost import kernel_memory_bandwidth
from costmodels.dp.compression_exchange import exchange_time
from costmodels.dp.method import SCHEDULE_NAMES as SCHEDULE_NAMES  # re-exported
from costmodels.dp.method import Architecture as Architecture  # re-exported
from costmodels.dp.method import Method
from costmodels.schedules import simulate
from costmodels.schedules.result import IterationResult
from costmodels.workloads import Workload


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
    callers with an equal but faster function (the calculator's affine fast path); BytePS priced
    partition by partition has no per-message time and ignores it.
    """
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    forward, backward = split_step(workload, step_time_s)
    gradients = workload.gradients(bytes_per_value=4, backward_s=backward)
    if _ps_queued(method, cluster):  # costmodels.dp.ps_pull_queue: no per-message time
        job = ps_pull_queue.BytePS(
            method.ps_partition_bytes or 0.0, cluster.nodes, cluster.gpus_per_node,
            method.ps_servers or cluster.nodes, method.ps_placement == "colocated",
            cluster.node_values(),
        )  # fmt: skip
        result = ps_pull_queue.iteration(method.schedule, gradients, forward, backward, job,
                                         method.overlap)  # fmt: skip
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
