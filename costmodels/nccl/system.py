"""The cluster as NCCL's model sees it: nodes of G GPUs on one intra-node fabric plus K NICs each.

Bandwidth names say what they count:

* ``intra_Bps_per_gpu``: one GPU into the node's fabric, one direction (NVLink or PCIe);
* ``nic_Bps_each``: one NIC, one direction, as achieved (nominal rate x achievable fraction);
* ``nics_per_node``: K, the NICs (rails) of a node; the node's network bandwidth is
  ``node_network_Bps = K x nic_Bps_each``. NCCL runs one ring or tree channel per NIC (rail), so
  a multi-node ring uses every NIC of the node, not one.

Latencies that are not NCCL's own tables are explicit: ``launch_s`` (per call, the device-side
fixed cost one process sees), ``host_enqueue_s`` (the host's cost of one call when a process
drives several GPUs, as nccl-tests ``-g 8`` does: back to back, a call then takes the longer of
the host and the device), ``nic_latency_s`` (added per network hop in the time, like NCCL's
``latencyInter``) and ``intra_hop_latency_s`` (added per hop inside a node; 0 by default because
NCCL's hop table already prices NVLink and PCIe steps).

Two views of one system: the realised one (achieved NIC rates, the network's share at this node
count, the transport's hop latency, fixed costs) prices the time; :meth:`NcclSystem.nccl_view`
is what NCCL's own tuner sees (the NICs' port speed, the plugin's reported latency, no fixed
costs, no loss with scale) and makes the choice of algorithm and protocol.

Example::

    >>> from costmodels.nccl.fabrics import fabric_for_gpu
    >>> s = NcclSystem(nodes=2, gpus_per_node=8, fabric=fabric_for_gpu("a100"),
    ...                nic_Bps_each=12.5e9 * 0.9, nics_per_node=16)
    >>> s.p, round(s.node_network_Bps / 1e9)
    (16, 180)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from costmodels.limits import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_NODES, check_count
from costmodels.nccl.constants import CPU_VENDOR, LAUNCH_OVERHEAD_US, PROTOCOL_STARTUP_US
from costmodels.nccl.fabrics import Arch, IntraFabric
from costmodels.nccl.scaling import network_share
from costmodels.nccl.transports import TRANSPORTS, Transport


def _seconds(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what}: expected a number of seconds, got {value!r}")
    if not 0 <= value < 1.0:  # a second per call or per hop is not a latency any more
        raise ValueError(f"{what}: must be from 0 to 1 second, got {value!r}")
    return float(value)


def _bandwidth(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what}: expected bytes per second, got {value!r}")
    if not 0 < value < 1e15:  # a PB/s link does not exist
        raise ValueError(f"{what}: must be positive and below 1 PB/s, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class NcclSystem:
    """Nodes x GPUs per node, the intra-node fabric and the NICs (SI units throughout).

    ``notes`` record where the numbers came from (preset, given, fitted) for the command's and
    the page's assumptions text.
    """

    nodes: int
    gpus_per_node: int
    fabric: IntraFabric
    intra_Bps_per_gpu: float | None = None  # None: the fabric's figure
    nic_Bps_each: float | None = None  # needed when nodes > 1
    nics_per_node: int | None = None  # None: one NIC per GPU
    nic_name: str = "network"
    nic_latency_s: float = 0.0
    intra_hop_latency_s: float = 0.0
    launch_s: float = LAUNCH_OVERHEAD_US * 1e-6
    startup_s: tuple[float, float, float] = tuple(  # LL, LL128, Simple
        PROTOCOL_STARTUP_US[k] * 1e-6 for k in ("ll", "ll128", "simple")
    )
    collnet: bool = False  # the network reduces in switches (SHARP), so CollNet is usable
    cpu_vendor: str = CPU_VENDOR
    transport: Transport = TRANSPORTS["ib"]
    nic_nominal_Bps: float | None = None  # port speed NCCL's search sees (None: nic_Bps_each)
    host_enqueue_s: float = 0.0  # host cost of one call with several GPUs per process
    startup_ramp_bytes: float = 0.0  # > 0: the start-up grows with the size up to this many bytes
    tuner_view: bool = False  # True: NCCL's own view (nccl_view), no realised losses
    memory_Bps: float = 0.0  # the GPU's memory bandwidth (0: unknown): all-gather's local copy
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        check_count(self.nodes, "nodes", MAX_NODES)
        check_count(self.gpus_per_node, "gpus_per_node", MAX_GPUS_PER_NODE)
        if self.nodes * self.gpus_per_node > MAX_GPUS:
            raise ValueError(
                f"nodes x gpus_per_node = {self.nodes * self.gpus_per_node:,} GPUs; at most "
                f"{MAX_GPUS:,} are modelled"
            )
        if self.gpus_per_node > self.fabric.max_gpus:
            raise ValueError(
                f"gpus_per_node: {self.gpus_per_node} GPUs do not fit one {self.fabric.name} "
                f"(at most {self.fabric.max_gpus})"
            )
        if self.intra_Bps_per_gpu is not None:
            _bandwidth(self.intra_Bps_per_gpu, "intra_Bps_per_gpu")
        if self.nics_per_node is not None:
            check_count(self.nics_per_node, "nics_per_node", MAX_GPUS_PER_NODE)
        if self.nic_Bps_each is not None:
            _bandwidth(self.nic_Bps_each, "nic_Bps_each")
        elif self.nodes > 1:
            raise ValueError("nic_Bps_each: a cluster of several nodes needs its NIC bandwidth")
        _seconds(self.nic_latency_s, "nic_latency_s")
        _seconds(self.intra_hop_latency_s, "intra_hop_latency_s")
        _seconds(self.launch_s, "launch_s")
        _seconds(self.host_enqueue_s, "host_enqueue_s")
        if self.nic_nominal_Bps is not None:
            _bandwidth(self.nic_nominal_Bps, "nic_nominal_Bps")
        if not isinstance(self.transport, Transport):
            raise ValueError(f"transport must be a Transport, got {self.transport!r}")
        if len(self.startup_s) != 3:
            raise ValueError("startup_s: give three seconds (LL, LL128, Simple)")
        for value in self.startup_s:
            _seconds(value, "startup_s")
        if self.cpu_vendor not in ("intel", "amd"):
            raise ValueError(f"cpu_vendor must be 'intel' or 'amd', got {self.cpu_vendor!r}")

    # --- derived -----------------------------------------------------------------------------
    @property
    def p(self) -> int:
        """Ranks (GPUs) of the job."""
        return self.nodes * self.gpus_per_node

    @property
    def arch(self) -> Arch:
        return self.fabric.arch

    @property
    def bus_Bps(self) -> float:
        """Per-GPU intra-node bandwidth in use (given, fitted, or the fabric's for this many GPUs
        per node: on a mesh or PCIe tree it depends on which GPUs a job has)."""
        return self.intra_Bps_per_gpu or self.fabric.ring_Bps(self.gpus_per_node)

    @property
    def intra_hop(self) -> str:
        """NCCL's hop-latency row inside the node ("nvlink" or "pci")."""
        return self.fabric.hop_for(self.gpus_per_node)

    @property
    def ll128_intra(self) -> bool:
        """LL128 allowed inside the node (NVLink paths only)."""
        return self.fabric.ll128_for(self.gpus_per_node)

    @property
    def network_share(self) -> float:
        """Share of the NICs' two-node rate kept at this node count (costmodels.nccl.scaling);
        1 in NCCL's own view."""
        if self.tuner_view or self.nodes == 1:
            return 1.0
        return network_share(self.transport.scaling, self.nodes)

    @property
    def nics(self) -> int:
        """NICs per node (default: one per GPU, a rail-optimised node)."""
        return self.nics_per_node or self.gpus_per_node

    @property
    def node_network_Bps(self) -> float:
        """All NICs of one node together, one direction, at this node count (0 on one node)."""
        return self.nics * self.nic_Bps_each * self.network_share if self.nic_Bps_each else 0.0

    def nccl_view(self) -> NcclSystem:
        """The system as NCCL's tuner sees it: the NICs' port speed, the plugin's reported
        latency per network step, no per-call costs and no loss with node count. The choice of
        algorithm and protocol is made on this view (src/enqueue.cc topoGetAlgoInfo takes the
        lowest of NCCL's own estimates); the time is then that pair's on the realised system."""
        if self.tuner_view:
            return self
        return replace(
            self, nic_Bps_each=self.nic_nominal_Bps or self.nic_Bps_each,
            nic_latency_s=self.transport.reported_latency_s, launch_s=0.0,
            startup_s=(0.0, 0.0, 0.0), host_enqueue_s=0.0, tuner_view=True,
        )  # fmt: skip

    @property
    def tree_levels(self) -> int:
        """floor(log2(nodes)): the depth NCCL charges a binary tree over the nodes (log2i)."""
        return int(math.floor(math.log2(self.nodes)))

    def with_changes(self, **changes: object) -> NcclSystem:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)
