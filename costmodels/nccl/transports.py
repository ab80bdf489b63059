"""Network transports as NCCL uses them: what the net plugin tells NCCL's tuner and how it runs.

NCCL reaches other nodes through a network plugin (src/include/net.h): its own IB verbs plugin
(InfiniBand, RoCE), its socket plugin (TCP), or a vendor plugin (AWS aws-ofi-nccl over EFA,
Google's GPUDirect-TCPX / TCPXO). Two numbers of a plugin reach NCCL's tuner: the port speed
(graph search, ``bwInter``) and ``latency`` (``graphs[a]->latencyInter``, added to every network
step of tuning.cc, twice for Simple). A plugin may also restrict the protocols (aws-ofi-nccl
forces ``NCCL_PROTO=simple`` where EFA does not deliver bytes in order) and a cloud's profile
may restrict the algorithms (Google's TCPX recipes set ``NCCL_ALGO=Ring``).

Each :class:`Transport` keeps both views apart:

* ``reported_latency_s``: what the plugin reports to NCCL (choice of algorithm and protocol);
* ``hop_latency_s``: the latency one network step adds in the time (the NIC and wire), which is
  not what every plugin reports (aws-ofi-nccl reports 75 us on p5 to steer NCCL's choice);
* ``efficiency``: the share of the NIC's nominal rate large transfers reach on 2 nodes;
* ``scaling``: how that share falls with the node count (costmodels.nccl.scaling).

``buffsize_bytes`` is NCCL_BUFFSIZE as the platform sets it (aws-ofi-nccl platform_data_map
env: NCCL_BUFFSIZE=8388608 on p4d/p5; Google's TCPXO scripts NCCL_BUFFSIZE=8388608; NCCL's
default 4 MiB, src/init.cc DEFAULT_BUFFSIZE): a Simple step carries an eighth of it.

Sources are named per transport; numbers chosen on the project's dev data say so.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_PROTOCOLS = ("ll", "ll128", "simple")


@dataclass(frozen=True)
class Transport:
    """One way of moving NCCL's network traffic (SI units)."""

    key: str
    name: str
    plugin: str
    reported_latency_s: float  # latencyInter NCCL's tuner sees
    hop_latency_s: float  # added per network step in the time
    protocols: tuple[str, ...]  # protocols NCCL may use across nodes
    efficiency: float  # achieved / nominal NIC rate, large transfers, 2 nodes
    gdr: bool  # GPUDirect RDMA: the NIC reads and writes GPU memory
    source: str
    algorithms: tuple[str, ...] | None = None  # None: every algorithm NCCL has
    scaling: str = "flat"  # key of costmodels.nccl.scaling.SCALING
    estimate: bool = False
    buffsize_bytes: int = 4 << 20  # NCCL_BUFFSIZE of the Simple protocol (init.cc default 4 MiB)

    def allows(self, algorithm: str, protocol: str) -> bool:
        """Whether NCCL may run (algorithm, protocol) across nodes on this transport."""
        if protocol not in self.protocols:
            return False
        return self.algorithms is None or algorithm in self.algorithms


_IB_LATENCY = (
    "NCCL's IB plugin reports no latency (src/transport/net_ib/init.cc: props->latency = 0), so "
    "NCCL's tuner prices network steps with its own table only"
)
_RDMA_HOP = "one switched RDMA hop: a few microseconds (estimate, 2 us as in hardware/links.py)"
_AWS_PLATFORM = (
    "aws/aws-ofi-nccl src/platform-aws.cpp platform_data_map: p4d/p4de latency 75, "
    "default protocol SENDRECV; p5/p5e latency 75, protocol RDMA; p5en/p6-b200 latency 35; "
    "p3dn latency 150, GDR not required"
)
_AWS_PROTO = (
    "aws-ofi-nccl forces NCCL_PROTO=simple where EFA lacks byte delivery ordering (p4d log in "
    "aws/aws-ofi-nccl#982: 'Need to force simple protocol: byte delivery ordering not "
    "supported'); not on P5 with the RDMA protocol (aws/aws-ofi-nccl PR #280)"
)
_AWS_HOP = (
    "the plugin's own model tuner prices the network at 20 us (aws-ofi-nccl "
    "include/nccl_ofi_param.h TUNER_NET_LATENCY default 20, 'Latency in usecs'): used as the "
    "time of one EFA step (estimate)"
)

TRANSPORTS: dict[str, Transport] = {
    t.key: t
    for t in (
        Transport(
            "ib", "InfiniBand, GPUDirect RDMA", "NCCL IB verbs (net_ib)", 0.0, 2e-6,
            ALL_PROTOCOLS, 0.9, True,
            f"{_IB_LATENCY}; {_RDMA_HOP}; efficiency 0.9 of the 4x data rate (hardware/links.py "
            "estimate, checked on the shipped OKE 2-node log: "
            "costmodels/calibration/nccl_shipped_logs.py)",
        ),
        Transport(
            "roce", "RoCE v2, GPUDirect RDMA", "NCCL IB verbs over RoCE (net_ib)", 0.0, 2e-6,
            ALL_PROTOCOLS, 0.9, True,
            f"{_IB_LATENCY}; RoCE uses the same verbs plugin; {_RDMA_HOP}; efficiency as IB "
            "(the shipped OKE 2-node log is RoCE)",
        ),
        Transport(
            "efa", "AWS EFA (SRD), RDMA protocol", "aws-ofi-nccl (libfabric efa)", 75e-6, 20e-6,
            ALL_PROTOCOLS, 0.9, True,
            f"{_AWS_PLATFORM}; {_AWS_PROTO}; {_AWS_HOP}; efficiency and node scaling fitted on "
            "efa-allreduce-vs-nodes-dev.csv (costmodels/nccl/scaling.py)",
            scaling="efa", buffsize_bytes=8 << 20,
        ),
        Transport(
            "efa-sendrecv", "AWS EFA (SRD), send/recv protocol, Simple only",
            "aws-ofi-nccl (libfabric efa)", 75e-6, 20e-6, ("simple",), 0.9, True,
            f"{_AWS_PLATFORM}; {_AWS_PROTO}; {_AWS_HOP}; efficiency and scaling as EFA on P5 "
            "(no p4d dev data: estimate)",
            scaling="efa", estimate=True, buffsize_bytes=8 << 20,
        ),
        Transport(
            "tcpx", "Google GPUDirect-TCPX", "nccl-plugin-gpudirecttcpx", 0.0, 6.5e-6,
            ("simple",), 0.9, True,
            "GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpxo/nccl-config.yaml "
            "(the A3 High TCPX recipe): NCCL_ALGO=Ring, NCCL_PROTO=Simple, 4 NICs; hop latency "
            "and efficiency taken from TCPXO's dev fit (estimate)",
            algorithms=("ring",), estimate=True,
        ),
        Transport(
            "tcpxo", "Google GPUDirect-TCPXO (FasTrak)", "nccl-plugin-gpudirecttcpx (FasTrak)",
            6.5e-6, 6.5e-6, ("simple",), 0.98, True,
            "Google's TCPXO NCCL profile without NVLS/LL128 ('nccl-env-profile-simple.sh' in "
            "GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpxo/best-practice.md:"
            " NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0; NCCL_ALGO=Ring,Tree in the A3 Mega scripts);"
            " the plugin's reported latency is not published: hop latency fitted on "
            "gcp-a3mega-2node-allreduce-dev.csv (8 B rows), efficiency on its 8 GiB rows",
            algorithms=("ring", "tree"), buffsize_bytes=8 << 20,
        ),
        Transport(
            "socket", "TCP sockets (no GPUDirect)", "NCCL socket transport (net_socket)", 0.0,
            30e-6, ("ll", "simple"), 0.9, False,
            "NCCL's socket plugin reports no latency (src/transport/net_socket.cc: props->latency"
            " = 0); kernel TCP round trip tens of microseconds (hardware/links.py estimate, "
            "30 us); LL128 needs GPUDirect paths (tuning.cc enables it only up to PXB/PXN): "
            "left out here (estimate)",
            estimate=True,
        ),
    )
}  # fmt: skip

_ALIASES = {"infiniband": "ib", "rdma": "ib", "gpudirectrdma": "ib", "rocev2": "roce",
            "awsefa": "efa", "efasendrecv": "efa-sendrecv", "gpudirecttcpx": "tcpx",
            "gpudirecttcpxo": "tcpxo", "fastrak": "tcpxo", "tcp": "socket", "sockets": "socket",
            "ethernet": "socket"}  # fmt: skip


def get_transport(name: str | Transport) -> Transport:
    """A transport by key or alias ('ib', 'RoCE', 'efa', 'tcpxo', 'tcp' ...)."""
    if isinstance(name, Transport):
        return name
    if not isinstance(name, str):
        raise TypeError(f"transport must be a str, got {type(name).__name__}")
    key = "".join(ch for ch in name.lower() if ch.isalnum() or ch == "-")
    plain = key.replace("-", "")
    for transport in TRANSPORTS.values():
        if transport.key.replace("-", "") == plain:
            return transport
    if plain in _ALIASES:
        return TRANSPORTS[_ALIASES[plain]]
    raise ValueError(f"unknown transport {name!r}; choose from {', '.join(TRANSPORTS)}")


def transport_for_link(link_name: str) -> str:
    """The transport a link preset's name implies: InfiniBand -> ib, RoCE -> roce, plain
    Ethernet -> socket (TCP); anything else (a bare bandwidth) -> ib (RDMA, stated)."""
    low = link_name.lower()
    if "roce" in low:
        return "roce"
    if "gbe" in low or "ethernet" in low:
        return "socket"
    return "ib"
