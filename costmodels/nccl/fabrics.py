"""Intra-node fabrics: how the GPUs of one node reach each other, as NCCL's topology code sees it.

Every bandwidth here is **per GPU, one direction**: what one GPU can push into the fabric while
it also receives as much. NCCL's topology code (src/graph/topo.h, topo.cc) does not use the
NVLink signalling rate: it counts NVLinks x a per-link figure below the rate (20 GB/s on
NVLink 2 and 3, 20.6 on NVLink 4, 40.1 on NVLink 5, against 25 / 25 / 25 / 50 GB/s signalled),
and reads PCIe from the lane rate (12 / 24 / 48 GB/s for Gen 3 / 4 / 5 x16). Those are the
numbers its ring and tree bandwidths start from, so they are the ones used here.

A GPU preset (names of costmodels/hardware/gpus.py) maps to its usual fabric:

=================  =====================  ==========================================  =====
GPU                fabric                 per-GPU bandwidth (NCCL's view)             NVLS
=================  =====================  ==========================================  =====
V100 SXM2          NVLink 2 hybrid mesh   rings over the DGX-1's links: 40 GB/s on 2   no
                                          GPUs, 80 on 4, 120 on 8 (node_topologies)
A100 40/80GB SXM   NVSwitch, NVLink 3     12 links x 20 GB/s = 240 GB/s               no
H100 / H200 SXM    NVSwitch, NVLink 4     18 links x 20.6 GB/s = 370.8 GB/s           yes
B200               NVSwitch, NVLink 5     18 links x 40.1 GB/s = 721.8 GB/s           yes
GB200              NVL72 NVLink Switch    18 links x 40.1 GB/s, up to 72 GPUs         yes
B300               NVSwitch, NVLink 5     18 links x 40.1 GB/s = 721.8 GB/s           yes
GB300              NVL72 NVLink Switch    18 links x 40.1 GB/s, up to 72 GPUs         yes
H100 PCIe          PCIe 5.0 switch        48 GB/s                                     no
RTX 2080 Ti        PCIe 3.0 via the CPU   12 / 1.2 = 10 GB/s                          no
MI300X / MI325X    xGMI, fully connected  7 links x 48 GB/s = 336 GB/s (RCCL's view)  no
MI355X             xGMI, fully connected  7 links x 57.6 GB/s = 403 GB/s (estimate)   no
=================  =====================  ==========================================  =====

The AMD fabrics are run by RCCL's tuner (costmodels.nccl.rccl), not NCCL's.

Cluster presets name two more node fabrics (:data:`NODE_FABRICS`): the DGX-2 (16 V100 on
first-generation NVSwitches, 120 GB/s each) and a dual-root PCIe server of 8 GeForce boards
(rings bounded by the socket link, 10 GB/s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from costmodels.hardware.gpus import get_gpu
from costmodels.nccl.constants import NVLINK_LINK_GBPS, PCIE_X16_GBPS
from costmodels.nccl.node_topologies import ring_capacity

FabricKind = Literal["nvswitch", "nvlink-mesh", "pcie-switch", "pcie-host", "xgmi-mesh"]
Arch = Literal["volta", "ampere", "hopper", "blackwell", "cdna3", "cdna4"]


class NotModelledError(ValueError):
    """Hardware this NCCL model does not describe (say which and why)."""


@dataclass(frozen=True)
class IntraFabric:
    """One node's GPU-to-GPU fabric.

    ``bus_Bps_per_gpu`` is the bandwidth one GPU drives in one direction, in bytes/s, as NCCL's
    topology counts it; a ring or tree inside the node cannot beat it.
    """

    name: str
    kind: FabricKind
    arch: Arch  # NCCL's GPU class, which selects its per-generation constants
    bus_Bps_per_gpu: float
    nvls: bool  # NVLink SHARP (multicast + in-switch reduction) available
    max_gpus: int  # GPUs one such fabric connects
    source: str
    estimate: bool = False
    topology: str | None = None  # costmodels.nccl.node_topologies: links differ per GPU pair
    cpu_arch: Literal["x86", "arm"] = "x86"  # the host CPU (tuning.cc cpuArch)
    library: Literal["nccl", "rccl"] = "nccl"  # whose tuner runs it (costmodels.nccl.rccl)

    def ring_Bps(self, gpus: int) -> float:
        """Per-GPU ring bandwidth of a job on ``gpus`` GPUs of this fabric (bytes/s): the full
        figure on a switch, the best ring over the links that exist on a mesh or PCIe tree."""
        if self.topology is None:
            return self.bus_Bps_per_gpu
        return ring_capacity(self.topology, gpus)[0]

    def hop_for(self, gpus: int) -> Literal["nvlink", "pci"]:
        """The row of NCCL's hop-latency table (tuning.cc hwLatencies) a step inside the node
        uses: NVLink when the ring runs over NVLink only (typeIntra NVL), else PCI."""
        if self.topology is not None:
            return "nvlink" if ring_capacity(self.topology, gpus)[1] else "pci"
        return "nvlink" if self.kind in ("nvswitch", "nvlink-mesh", "xgmi-mesh") else "pci"

    def ll128_for(self, gpus: int) -> bool:
        """NCCL enables LL128 only over NVLink paths (tuning.cc: typeIntra <= PATH_NVB); RCCL
        leaves it off on gfx942/gfx950 (costmodels.nccl.rccl_constants)."""
        return self.hop_for(gpus) == "nvlink" and self.library == "nccl"

    @property
    def hop(self) -> Literal["nvlink", "pci"]:
        """:meth:`hop_for` the fabric's full node."""
        return self.hop_for(self.max_gpus)

    @property
    def ll128(self) -> bool:
        """:meth:`ll128_for` the fabric's full node."""
        return self.ll128_for(self.max_gpus)


def _nvswitch(gen: int, arch: Arch, links: int, nvls: bool, max_gpus: int, src: str) -> IntraFabric:
    per_link = NVLINK_LINK_GBPS[arch]
    return IntraFabric(
        name=f"NVSwitch, NVLink {gen} ({links} links x {per_link:g} GB/s)",
        kind="nvswitch", arch=arch, bus_Bps_per_gpu=links * per_link * 1e9, nvls=nvls,
        max_gpus=max_gpus,
        source=f"{src}; per-link figure {per_link:g} GB/s from NVIDIA/nccl src/graph/topo.h",
    )  # fmt: skip


def _nvl72(system: str, src: str) -> IntraFabric:
    """A Grace-Blackwell NVL72 rack: 72 GPUs on NVLink 5 switch trays, NVLS, Arm hosts."""
    per_link = NVLINK_LINK_GBPS["blackwell"]
    return IntraFabric(
        name=f"{system} NVL72: NVLink 5 switch trays (18 links x {per_link:g} GB/s, up to 72 GPUs)",
        kind="nvswitch", arch="blackwell", bus_Bps_per_gpu=18 * per_link * 1e9, nvls=True,
        max_gpus=72, source=f"{_NVLINK_GENS}; {src}", cpu_arch="arm",
    )  # fmt: skip


_NVLINK_GENS = (
    "NVLink links per GPU: V100 6, A100 12, H100 18 at 50 GB/s each, both directions together "
    "(A. Ishii and R. Wells, 'The NVLink-Network Switch', Hot Chips 34, 2022, slide 'NVLink "
    "generations'); Blackwell 18 links of 100 GB/s (NVIDIA NVLink page, catalogone.com copy)"
)
_NVLS = (
    "NVLS: third-generation NVSwitch (H100 systems) adds multicast and SHARP in-network "
    "reductions (NVIDIA developer blog 'Upgrading Multi-GPU Interconnectivity with the "
    "Third-Generation NVIDIA NVSwitch', 2022); NCCL searches NVLS graphs only with NVSwitches "
    "and compute capability >= 9.0 (src/graph/search.cc)"
)

FABRICS: dict[str, IntraFabric] = {
    "V100 SXM2": IntraFabric(
        name="NVLink 2 hybrid cube-mesh (DGX-1: 6 links x 20 GB/s; rings over the links)",
        kind="nvlink-mesh",
        arch="volta",
        bus_Bps_per_gpu=6 * NVLINK_LINK_GBPS["volta"] * 1e9,
        nvls=False,
        max_gpus=8,
        source="DGX-1 with V100: six NVLinks per GPU in a hybrid cube-mesh, 'three interwoven "
        "rings of single NVLink connections' (NVIDIA DGX-1 text as quoted on iitr.ac.in/dgx); "
        "link counts per GPU pair from microsoft/msccl-tools msccl/topologies/nvidia.py dgx1(); "
        "the ring bandwidth of the first g GPUs is the best packing of rings over those links "
        "(costmodels.nccl.node_topologies): 40 GB/s on 2, 80 on 4, 120 on 8",
        topology="dgx1",
    ),  # fmt: skip
    "A100 40GB SXM": _nvswitch(3, "ampere", 12, False, 8, _NVLINK_GENS),
    "A100 80GB SXM": _nvswitch(3, "ampere", 12, False, 8, _NVLINK_GENS),
    "H100 SXM": _nvswitch(4, "hopper", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    "H200 SXM": _nvswitch(4, "hopper", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    # issue 26 variants: the H100 board with 96 GB and the H20 keep 18 NVLink 4 links; the H800
    # has 8 (400 GB/s bidirectional, costmodels.hardware.gpus), which NCCL's per-link figure
    # puts at 8 x 20.6 = 164.8 GB/s, near DeepSeek-V3's "NVLink (160 GB/s)" (arXiv:2412.19437)
    "H100 SXM 96GB": _nvswitch(4, "hopper", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    "H20": _nvswitch(4, "hopper", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    "H800 SXM": _nvswitch(4, "hopper", 8, True, 8,
                          "H800: 400 GB/s NVLink bidirectional = 8 links of 50 GB/s; " + _NVLS),
    "B200": _nvswitch(5, "blackwell", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    "GB200": _nvl72("GB200", "NVL72: 72 Blackwell GPUs in one NVLink domain, NVLink Switch with "
                    "SHARP engines (NVIDIA NVLink page, catalogone.com copy). The NVLink domain "
                    "is the 'node' here: NCCL treats it as one (multi-node NVLink, MNNVL). Host "
                    "CPUs are Grace (Arm; MLPerf Inference v6.1 Crusoe GB200-NVL72 system "
                    "description)"),
    # issue 39: Blackwell Ultra keeps NVLink 5 (18 links, 1.8 TB/s per GPU both ways together;
    # verda.com GB300 NVL72 per-GPU table): HGX/DGX B300 boards of 8, GB300 NVL72 racks of 72
    "B300": _nvswitch(5, "blackwell", 18, True, 8, _NVLINK_GENS + "; " + _NVLS),
    "GB300": _nvl72("GB300", "GB300 NVL72: 72 Blackwell Ultra GPUs and 36 Grace CPUs in one "
                    "NVLink domain, '18 NVLink Switches at 130 TB/s' (glennklockwood.com B300 "
                    "page) = 1.8 TB/s per GPU; NCCL treats the rack as one node (MNNVL)"),
    "H100 PCIe": IntraFabric(
        name="PCIe 5.0 x16 behind a PCIe switch",
        kind="pcie-switch",
        arch="hopper",
        bus_Bps_per_gpu=PCIE_X16_GBPS[5] * 1e9,
        nvls=False,
        max_gpus=16,
        source="NCCL reads PCIe bandwidth from the lane rate: Gen 5 x16 = 16 x 240 / 80 = 48 "
        "GB/s (src/graph/topo.cc kvDictPciGen); a switch between the GPUs is assumed",
        estimate=True,  # the server's PCIe layout (switch or CPU) varies
    ),  # fmt: skip
    "RTX 2080 Ti": IntraFabric(
        name="PCIe 3.0 x16 through the CPU (no switch)",
        kind="pcie-host",
        arch="volta",
        bus_Bps_per_gpu=PCIE_X16_GBPS[3] / 1.2 * 1e9,
        nvls=False,
        max_gpus=8,
        source="NCCL: PCIe Gen 3 x16 = 12 GB/s (src/graph/topo.h PCI_BW); traffic between GPUs "
        "through an Intel root complex costs 6/5 of its bytes (topo.h INTEL_P2P_OVERHEAD), so "
        "12 / 1.2 = 10 GB/s. Turing uses NCCL's Volta-class constants (compute capability 7.5)",
        estimate=True,  # NVLink bridges and P2P support on GeForce boards vary
    ),  # fmt: skip
}

_XGMI = (
    "AMD Instinct 8-GPU platform: every MI300X has seven 16-lane Infinity Fabric (xGMI) links at "
    "32 Gbit/s per lane, 128 GB/s bidirectional each, one to each of the other seven GPUs "
    "(wheelersnetwork.com 'AMD Looks to Infinity for AI Interconnects', 2024); RCCL counts "
    "48 GB/s per gfx94x link (ROCm/rccl src/graph/topo.h GFX94X_XGMI_WIDTH, topo.cc "
    "ncclTopoXGMISpeed) and its MI300X topology models are fully connected (rome_models.cc "
    "rome_model_79/81/84: connMatrix all ones, nLinks 7)"
)


def _xgmi(name: str, arch: Arch, per_link_gbps: float, src: str, estimate: bool = False):
    return IntraFabric(
        name=f"{name}: Infinity Fabric (xGMI), 8 GPUs fully connected (7 links x "
        f"{per_link_gbps:g} GB/s)",
        kind="xgmi-mesh", arch=arch, bus_Bps_per_gpu=7 * per_link_gbps * 1e9, nvls=False,
        max_gpus=8, source=src, estimate=estimate, library="rccl",
    )  # fmt: skip


FABRICS.update({
    "MI300X": _xgmi("MI300X", "cdna3", 48.0, _XGMI),
    "MI325X": _xgmi("MI325X", "cdna3", 48.0, _XGMI + "; the MI325X keeps the MI300X's CDNA 3 "
                    "die and Infinity Fabric (costmodels.hardware.gpus)"),
    "MI355X": _xgmi(
        "MI355X", "cdna4", 48.0 * 76.8 / 64.0,
        "MI355X (gfx950): xGMI links of about 153 GB/s bidirectional (humeconsulting.co 'AMD "
        "MI355X: Strong Node-Level Inference, but Not Yet Rack-Scale'), 76.8 GB/s each way "
        "against the MI300X's 64; RCCL 2.21.5 has no gfx950 link figure, so RCCL's 48 GB/s "
        "gfx94x figure is scaled by 76.8 / 64 (estimate); 8 GPUs fully connected as MI300X",
        estimate=True),
})  # fmt: skip


# Fabrics a cluster preset names for its node (costmodels/hardware/clusters.py), not a GPU's
# default: the same GPU sits in different nodes.
NODE_FABRICS: dict[str, IntraFabric] = {
    "dgx2-nvswitch": IntraFabric(
        name="DGX-2: 16 V100 on 12 first-generation NVSwitches (6 links x 20 GB/s per GPU)",
        kind="nvswitch", arch="volta", bus_Bps_per_gpu=6 * NVLINK_LINK_GBPS["volta"] * 1e9,
        nvls=False, max_gpus=16,
        source="NVIDIA DGX-2: sixteen V100 connected by NVSwitch, 300 GB/s per GPU both ways "
        "(pcper.com 'NVIDIA Announces DGX-2 with 16 GV100s & 8 100Gb NICs', 2018); six NVLink 2 "
        "links per V100 at NCCL's 20 GB/s (topo.h SM70_NVLINK_BW); first-generation NVSwitch "
        "has no NVLink SHARP",
    ),
    "pcie-dual-root": IntraFabric(
        name="8 PCIe Gen 3 GPUs, dual-root (2 per PCIe switch, 2 switches per socket)",
        kind="pcie-host", arch="volta", bus_Bps_per_gpu=PCIE_X16_GBPS[3] / 1.2 * 1e9,
        nvls=False, max_gpus=8, topology="pcie-dual-root",
        source="Supermicro SYS-4029GP-TRT dual-root PCIe layout (supermicro.org.cn 'PCIe Root "
        "Architectures'); rings bounded by the GPU's x16 (12 GB/s), the uplink through the "
        "root complex (12 / 1.2) and the socket link (SKL_QPI_BW 10 GB/s), NCCL's topo.h "
        "figures; Turing boards use NCCL's Volta-class constants",
        estimate=True,  # which switch holds which GPU varies between servers
    ),
}  # fmt: skip

def fabric_for_gpu(name: str) -> IntraFabric:
    """The default fabric of a GPU preset (any spelling costmodels.hardware.get_gpu accepts).

    Raises ValueError for an unknown GPU and :class:`NotModelledError` for one whose fabric this
    model does not describe (a PCIe board without a fabric preset, such as the L40S). AMD's
    MI300X, MI325X and MI355X have their xGMI fabrics (issue 40; RCCL's tuner runs them).
    """
    if not isinstance(name, str):
        raise TypeError(f"gpu must be a str, got {type(name).__name__}")
    gpu = get_gpu(name)  # ValueError listing the presets
    if gpu.name not in FABRICS:
        raise NotModelledError(f"gpu {name!r}: no intra-node fabric is modelled for {gpu.name}")
    return FABRICS[gpu.name]


def get_fabric(name: str) -> IntraFabric:
    """A node fabric by its key in :data:`NODE_FABRICS`, else the default fabric of a GPU."""
    if isinstance(name, str) and name in NODE_FABRICS:
        return NODE_FABRICS[name]
    return fabric_for_gpu(name)


def fabric_preset(gpu: str | None, gpus_per_node: int) -> str | None:
    """``gpu`` when its fabric is modelled and a node of ``gpus_per_node`` fits one such board,
    else None: the caller then describes the node by its intra-node bandwidth alone
    (:func:`custom_fabric`). Unknown names, GPUs without a fabric preset and 16 GPUs per node
    of 8-GPU boards alike."""
    if gpu is None:
        return None
    try:
        fabric = fabric_for_gpu(gpu)
    except ValueError:  # not a preset, or NotModelledError (no fabric preset)
        return None
    return gpu if gpus_per_node <= fabric.max_gpus else None


def custom_fabric(bus_Bps_per_gpu: float, arch: Arch = "ampere") -> IntraFabric:
    """A fabric given by its per-GPU bandwidth only (``--intra``). At 50 GB/s or more it is taken
    as NVLink through switches (NCCL's NVLink latency row, LL128 allowed), below as PCIe."""
    if not 0 < bus_Bps_per_gpu < float("inf"):
        raise ValueError(f"intra bandwidth must be positive and finite, got {bus_Bps_per_gpu!r}")
    nvlink = bus_Bps_per_gpu >= 50e9
    return IntraFabric(
        name=f"custom ({bus_Bps_per_gpu / 1e9:.4g} GB/s per GPU, "
        f"{'NVLink-class' if nvlink else 'PCIe-class'})",
        kind="nvswitch" if nvlink else "pcie-switch", arch=arch,
        bus_Bps_per_gpu=float(bus_Bps_per_gpu), nvls=False, max_gpus=1024,
        source="given by the user; the NVLink/PCIe class (latency row, LL128) is an estimate "
        "from the bandwidth (>= 50 GB/s: NVLink)",
        estimate=True,
    )  # fmt: skip
