"""How gradients are exchanged: architecture x collective x schedule x compression, and the
framework's fixed costs (``commatlas predict``'s --architecture, --schedule, --collective,
--ps-servers, --ps-placement, --compression; presets in costmodels.schedules.frameworks).

``costmodels.dp.predict`` prices one iteration with it; BytePS with ``ps_partition_bytes`` runs
as a pipeline (costmodels.dp.ps_pipeline) or, under BSP/WFBP on several machines, partition by
partition (costmodels.dp.ps_pull_queue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from costmodels.dp import ps_pipeline
from costmodels.dp.cluster import ALLREDUCE_CHOICES, Cluster
from costmodels.schedules.fixed_costs import FixedCosts

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
        servers = self.ps_servers
        if servers is not None and (isinstance(servers, bool) or not isinstance(servers, int)
                                    or servers < 1):  # fmt: skip
            raise ValueError(f"ps_servers must be a whole number >= 1 or None (one per node), "
                             f"got {servers!r}")  # fmt: skip
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
