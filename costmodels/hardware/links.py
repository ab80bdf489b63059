"""Links: nominal bandwidth per direction, a typical latency and an achievable fraction.

Nominal bandwidths come from the standards (PCIe, IEEE 802.3 Ethernet, InfiniBand) or the
vendor (NVLink), each with where it was checked. Latencies and achievable fractions are rarely
published as such; where no benchmark was found they are marked ``*_estimate=True`` and the
source string gives the reasoning. Calibrate them (``commatlas calibrate``) before trusting a
prediction at small message sizes, where latency dominates.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """A point-to-point link as the alpha-beta model sees it (SI units)."""

    name: str
    bandwidth_Bps: float  # nominal data rate per direction, bytes/s, after line encoding
    bandwidth_source: str
    latency_s: float
    latency_source: str
    latency_estimate: bool
    achievable_fraction: float  # of bandwidth_Bps reached by large transfers
    fraction_source: str
    fraction_estimate: bool

    @property
    def alpha_s(self) -> float:
        """Per-message start-up time (the alpha of the alpha-beta model)."""
        return self.latency_s

    @property
    def beta_s_per_byte(self) -> float:
        """Seconds per byte at the achievable bandwidth (the beta of the alpha-beta model)."""
        return 1.0 / (self.bandwidth_Bps * self.achievable_fraction)


_PCIE = (
    "PCI-SIG rates: {gt} GT/s per lane, 128b/130b encoding, x16 -> {gt}e9*16*128/130/8 B/s per "
    "direction; table 'PCI Express bus' on hpc-notes.pages.dev (x16: 15.7 / 31.5 / 63.0 GB/s)"
)
_PCIE_LAT = (
    "estimate: a GPU-to-GPU copy through the host bridge costs microseconds of DMA set-up and "
    "CUDA launch; 5 us is an order of magnitude, not a measurement"
)
_PCIE_FRAC = (
    "estimate: transaction-layer packet headers (about 20-30 bytes per 256-byte payload) cap "
    "large copies near 80-90% of the link rate; 0.8 allows for the host bridge"
)
_ETH = "IEEE 802.3 nominal MAC data rate of {g}GBASE Ethernet: {g} Gbit/s = {g}e9/8 B/s"
_TCP_LAT = (
    "estimate: kernel TCP/IP round trip on a switched LAN is tens of microseconds; 30 us is "
    "an order of magnitude (the project's paper-a-alpha-beta.csv fits 10GbE all-reduce alpha of "
    "0.5-4 ms for 8-32 workers, which also includes framework overhead)"
)
_TCP_FRAC = (
    "estimate: Ethernet/IP/TCP headers take about 78 of every 1538 bytes on the wire (1500-byte "
    "MTU), about 95% goodput; 0.9 allows for the host stack"
)
_RDMA_LAT = (
    "estimate: RDMA verbs bypass the kernel; one switch hop gives small-message latencies of a "
    "few microseconds; 2 us used"
)
_RDMA_FRAC = (
    "estimate: 64b/66b encoding is already removed from the nominal rate; packet headers "
    "(about 60-90 bytes per 4096-byte MTU) and flow control leave about 90%"
)
_IB = (
    "InfiniBand Trade Association 4x link rates: EDR 100, HDR 200, NDR 400 Gbit/s data rate "
    "after 64b/66b encoding (table on infiniband.jp 'InfiniBand 規格': 4-lane effective "
    "100/200/400 Gbps; atgbics.com 'Direct Attach InfiniBand Port Speed Overview')"
)
_NVLINK_LAT = (
    "estimate: NVLink load/store between GPUs is sub-microsecond, but a collective step costs a "
    "kernel-side synchronisation of about a microsecond or two; 2 us used"
)
_NVLINK_FRAC = (
    "estimate: NCCL reports bus bandwidths of roughly 75-85% of the per-direction NVLink rate on "
    "8-GPU boards; 0.8 used (not checked against a stored benchmark)"
)


def _pcie(gen: int, gt: float) -> Link:
    return Link(f"PCIe {gen}.0 x16", gt * 1e9 * 16 * 128 / 130 / 8, _PCIE.format(gt=gt),
                5e-6, _PCIE_LAT, True, 0.8, _PCIE_FRAC, True)  # fmt: skip


def _ethernet(gbit: int, roce: bool) -> Link:
    name = f"RoCE {gbit}" if roce else f"{gbit} GbE"
    return Link(name, gbit * 1e9 / 8, _ETH.format(g=gbit),
                2e-6 if roce else 30e-6, _RDMA_LAT if roce else _TCP_LAT, True,
                0.9, _RDMA_FRAC if roce else _TCP_FRAC, True)  # fmt: skip


def _infiniband(label: str, gbit: int) -> Link:
    return Link(f"InfiniBand {label}", gbit * 1e9 / 8, _IB, 2e-6, _RDMA_LAT, True,
                0.9, _RDMA_FRAC, True)  # fmt: skip


LINKS: dict[str, Link] = {
    link.name: link
    for link in (
        _pcie(3, 8.0),
        _pcie(4, 16.0),
        _pcie(5, 32.0),
        Link("NVLink 3 (A100)", 300e9,
             "NVIDIA A100: 600 GB/s total NVLink bandwidth, 300 GB/s each way "
             "(glennklockwood.com/garden/processors/A100: '300+300 GB/s NVLink'; "
             "xynio.com A100 page: 'up to 600 gigabytes per second')",
             2e-6, _NVLINK_LAT, True, 0.8, _NVLINK_FRAC, True),
        Link("NVLink 4 (H100)", 450e9,
             "NVIDIA H100/H200 SXM: 900 GB/s total NVLink bandwidth, 450 GB/s each way "
             "(archive-lib.hpctech.co.jp H100 table: 'NVLink: 900GB/s'; saulelectric.com H200: "
             "'450GB/s unidirectional bandwidth, 900GB/s bidirectional')",
             2e-6, _NVLINK_LAT, True, 0.8, _NVLINK_FRAC, True),
        _ethernet(10, roce=False),
        _ethernet(25, roce=False),
        _ethernet(100, roce=False),
        _ethernet(400, roce=False),
        _infiniband("EDR", 100),
        _infiniband("HDR", 200),
        _infiniband("NDR", 400),
        _ethernet(100, roce=True),
        _ethernet(200, roce=True),
        _ethernet(400, roce=True),
        # AMD clusters' scale-out NICs (issue 40): RoCE v2 at 400 Gbit/s, as RoCE 400 otherwise
        Link("RoCE 400 (AMD Pollara 400)", 400e9 / 8,
             "AMD Pensando Pollara 400 AI NIC: 'up to 400 Gigabit per second (Gbps) Ethernet', "
             "UEC-ready RDMA, PCIe Gen5 x16 (amd.com network-interface-cards/pensando)",
             2e-6, _RDMA_LAT, True, 0.9, _RDMA_FRAC, True),
        Link("RoCE 400 (Broadcom Thor2)", 400e9 / 8,
             "Broadcom BCM57608 Thor2, the GPU back-end RoCE v2 NIC of AMD MI300X servers in "
             "Juniper's AI data-centre validated design (juniper.net JVD 'DCQCN configuration "
             "for RDMA traffic on NICs'); 400 Gbit/s is the part's top port speed (the stored "
             "page cuts its name at '25Gb/50Gb/': estimate)",
             2e-6, _RDMA_LAT, True, 0.9, _RDMA_FRAC, True),
    )
}  # fmt: skip

_ALIASES = {"pcie3": "PCIe 3.0 x16", "pcie4": "PCIe 4.0 x16", "pcie5": "PCIe 5.0 x16",
            "nvlink3": "NVLink 3 (A100)", "nvlink4": "NVLink 4 (H100)",
            "edr": "InfiniBand EDR", "hdr": "InfiniBand HDR", "ndr": "InfiniBand NDR",
            "10gbe": "10 GbE", "25gbe": "25 GbE", "100gbe": "100 GbE",
            "400gbe": "400 GbE",
            "ibedr": "InfiniBand EDR", "ibhdr": "InfiniBand HDR", "ibndr": "InfiniBand NDR",
            "roce100": "RoCE 100", "roce200": "RoCE 200", "roce400": "RoCE 400",
            "pollara": "RoCE 400 (AMD Pollara 400)", "pollara400": "RoCE 400 (AMD Pollara 400)",
            "thor2": "RoCE 400 (Broadcom Thor2)", "bcm57608": "RoCE 400 (Broadcom Thor2)"}
# fmt: skip


def get_link(name: str) -> Link:
    """A link by name or short alias ("pcie4", "ndr"), ignoring case, spaces and punctuation."""
    wanted = _key(name)
    for link_name, link in LINKS.items():
        if _key(link_name) == wanted:
            return link
    if wanted in _ALIASES:
        return LINKS[_ALIASES[wanted]]
    raise ValueError(f"unknown link {name!r}; choices: {', '.join(LINKS)}")


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())
