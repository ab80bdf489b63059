"""TCP/IP over any fabric as its own regime: what the kernel's stack, not the wire, decides.

A run "with TCP/IP" over a fast fabric (IP over InfiniBand, or Ethernet without RoCE) moves its
bytes through the kernel's TCP stack on the host CPUs, so two things of the RDMA path do not
carry over, whatever the wire's rate:

1. **Per-message latency.** Every step of a collective is a send and a receive through the
   kernel (system calls, copies, interrupts): tens of microseconds, not the one or two of an
   RDMA hop. The regime uses NCCL's socket transport as the project models it
   (costmodels.nccl.transports ``socket``: ``hop_latency_s`` 30 us, an estimate; the same value
   as the 10 GbE preset, with which the 10 GbE dev rows of Shi et al. are predicted) for every
   TCP/IP network, InfiniBand's included, instead of the fabric's RDMA preset (2 us).
2. **Streams and cores.** A TCP stream is served by one thread: NCCL's socket transport of 2019-20
   opens one socket per connection (src/transport/net_socket.cc, ncclSocketGetNsockNthread, for
   NICs other than AWS and GCP: v2.4.8 one helper thread with one socket, v2.5.6-v2.7.8 no helper
   thread, the data on the proxy thread; NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD unset in
   ddl-benchmarks' launch scripts), and the project's NCCL model runs one channel per NIC, so a
   node's ring traffic is one stream each way; BytePS's ps-lite moves everything of a process
   through ZeroMQ's I/O threads. How fast one such stream goes (copies and protocol work of one
   core, interrupt coalescing) is not a wire constant; in the validation it is what the BSP rows
   of that network fit (costmodels.dp.validation: the fitted inter-node bandwidth is an
   effective rate, bounded by the wire), separately for NCCL and for ps-lite, and since the
   stream count of each does not change with the GPU count here, one fitted rate per
   architecture holds for every row. The regime therefore adds no constant of its own here.

Also from the socket transport: no GPUDirect (bytes are staged in host memory) and no LL128
across nodes, which NCCL enables only on GPUDirect paths (costmodels.nccl.transports).
"""

from __future__ import annotations

import re

from costmodels.dp.validation_networks import network_kind, network_link
from costmodels.nccl.transports import get_transport

SOCKET = get_transport("socket")
TCP_HOP_LATENCY_S = SOCKET.hop_latency_s  # kernel TCP, per network step (estimate, 30 us)


def uses_tcp(network: str) -> bool:
    """Whether the network name says the runs went through TCP/IP: 'TCP', 'IPoIB' or 'sockets'
    in the name, or Ethernet without RDMA/RoCE (plain Ethernet is always TCP for NCCL)."""
    lower = str(network).lower()
    if re.search(r"tcp|ipoib|socket", lower):
        return True
    return network_kind(network) == "ethernet"


def nccl_transport(network: str) -> str:
    """The NCCL transport key of the network: socket for TCP/IP, else the fabric's RDMA path."""
    if uses_tcp(network):
        return SOCKET.key
    return "roce" if network_kind(network) == "roce" else "ib"


def inter_latency_s(network: str) -> float:
    """Seconds per inter-node step: the kernel TCP stack's for TCP/IP, else the link preset's.

    >>> inter_latency_s("100GbIB with TCP/IP"), inter_latency_s("100GbIB with RDMA")
    (3e-05, 2e-06)
    """
    return TCP_HOP_LATENCY_S if uses_tcp(network) else network_link(network).latency_s
