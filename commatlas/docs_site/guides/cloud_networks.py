"""The guide "Which cloud network is my cluster?" (``generated/guides/cloud-networks.md``): the
cluster presets, the transports NCCL's traffic takes, and what they do to a collective; every
number is computed at build time from costmodels.hardware.cluster_presets and costmodels.nccl."""

from __future__ import annotations

from functools import cache

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from taxonomy import Taxonomy

SLUG = "cloud-networks"
SIZE = 256 * 2**20  # the all-reduce the table prices (the EFA dev series' size)
NODES = (1, 2, 8, 32)
# What NCCL_DEBUG=INFO prints for each transport (the plugin's own log tag).
LOG_LINES = {
    "ib": "`NET/IB` and the HCA names (mlx5_*); InfiniBand link layer",
    "roce": "`NET/IB` with an Ethernet link layer and a RoCE GID index",
    "efa": "`NET/OFI Selected Provider is efa` (aws-ofi-nccl); no forced NCCL_PROTO",
    "efa-sendrecv": "`NET/OFI` ... `Need to force simple protocol` (P4d, send/recv protocol)",
    "tcpx": "`NET/GPUDirectTCPX` (Google's TCPX plugin, A3 High)",
    "tcpxo": "`NET/FasTrak` (Google's TCPXO plugin, A3 Mega)",
    "socket": "`NET/Socket` only: no RDMA plugin loaded, TCP through host memory",
}


@cache
def preset_rows() -> list[list[str]]:
    """One row per preset: hardware facts and the predicted all-reduce busbw by node count."""
    from costmodels.hardware.cluster_presets import CLUSTERS
    from costmodels.nccl.presets import cluster_system
    from costmodels.nccl.tuner import collective_time

    rows = []
    for preset in CLUSTERS.values():
        cells = []
        for nodes in NODES:
            system = cluster_system(preset.name, nodes * preset.gpus_per_node)
            est = collective_time("all-reduce", [SIZE], system)
            cells.append(f"{float(est.busbw_Bps[0]) / 1e9:.0f}")
        sharp = " + SHARP" if preset.sharp else ""
        rows.append([f"`{preset.name}`", preset.gpu, f"{preset.gpus_per_node}",
                     f"{preset.nics_per_node} x {preset.nic_gbit:g}", preset.transport + sharp,
                     *cells])  # fmt: skip
    return rows


@cache
def transport_rows() -> list[list[str]]:
    from costmodels.nccl.transports import TRANSPORTS

    return [[f"`{t.key}`", t.plugin, ", ".join(t.protocols),
             "all" if t.algorithms is None else ", ".join(t.algorithms),
             f"{t.reported_latency_s * 1e6:g}", f"{t.hop_latency_s * 1e6:g}", f"{t.efficiency:g}",
             LOG_LINES[t.key]] for t in TRANSPORTS.values()]  # fmt: skip


@cache
def dev_summary() -> dict[str, dict]:
    from costmodels.nccl.cloud_series import efa_allreduce, gcp_allreduce, summary

    gcp = gcp_allreduce()
    return {"efa": summary(efa_allreduce()), "gcp_big": summary(gcp, 2.0**20),
            "gcp_small": summary(gcp, 0.0, 2.0**20)}  # fmt: skip


def page_text(tax: Taxonomy) -> str:
    dev = dev_summary()
    lines = [
        "# Which cloud network is my cluster?",
        "",
        "**The question.** The same eight H100 GPUs communicate very differently on an "
        "InfiniBand SuperPOD, AWS P5 (EFA), Google Cloud A3 Mega (GPUDirect-TCPXO) or a "
        "consumer PCIe box. Which of these is your cluster, and what does its network do to "
        "a collective? `commatlas clusters` lists the presets; `--cluster NAME` on every "
        "command (and the calculator's *Cluster preset* menu) fills the GPU, the node, the "
        "NICs and the transport, and any explicit flag overrides a field.",
        "",
        "## The presets",
        "",
        f"Bus bandwidth of a {SIZE // 2**20} MiB all-reduce (GB/s, nccl-tests' convention) "
        f"with only the preset, on 1, 2, 8 and 32 nodes; NICs are counted as NCCL sees them "
        "(aws-ofi-nccl groups a P5's 32 EFA devices into 8 rails of 400 Gbit/s). Each preset's "
        "facts and sources: `commatlas clusters NAME`.",
        "",
        *c.table(["preset", "GPU", "GPUs/node", "NICs x Gbit/s", "transport",
                  *[f"{n} node{'s' if n > 1 else ''}" for n in NODES]], preset_rows()),
        "## The transports",
        "",
        "A network plugin tells NCCL's tuner a port speed and a latency per network step; the "
        "tuner picks the algorithm and protocol from those alone, then the call runs at what "
        "the network delivers. CommAtlas keeps both views: the *choice* uses the plugin's "
        "reported latency and the nominal rate, the *time* the transport's hop latency and "
        "achieved rate. aws-ofi-nccl reports 75 us on P4d/P5 to steer NCCL towards trees; "
        "Google's TCPX/TCPXO profiles restrict the algorithms and protocols outright.",
        "",
        *c.table(["transport", "plugin", "protocols across nodes", "algorithms",
                  "reported us", "time us / hop", "efficiency", "how to recognise it"],
                 transport_rows()),  # fmt: skip
        "To find yours, run any NCCL job with `NCCL_DEBUG=INFO` and look for the line in the "
        "last column; `nvidia-smi topo -m` shows whether GPUs meet on NVLink (`NV18`, "
        "`NV12`), a hybrid mesh (`NV1`/`NV2`: a DGX-1) or PCIe (`PIX`, `PHB`, `SYS`).",
        "",
        "## What changes with the network",
        "",
        "- **Node count.** On a non-blocking, rail-optimised fat tree (SuperPOD, Azure ND, "
        "CoreWeave, OCI) the network keeps its rate at every size; only NCCL's latency grows "
        "(log N for trees, N for rings). EFA does not: the shipped dev series (256 MB "
        "all-reduce, 1-64 nodes of 8 H100, medians) keeps 0.59 of the 2-node rate at 4 nodes "
        "and 0.11 at 64; CommAtlas applies that fitted curve to every EFA preset "
        "(`costmodels/nccl/scaling.py`).",
        "- **Protocols.** On P4d aws-ofi-nccl forces Simple: no LL or LL128 across nodes, so "
        "small messages pay Simple's latency. Google's TCPXO profile without NVLS uses Ring and "
        "Tree with Simple only.",
        "- **Pipeline fill.** A Simple tree moves chunks of NCCL_BUFFSIZE / 8 per channel and "
        "fills a pipeline g - 1 + log2 N hops deep before it runs at full rate; with the 8 MiB "
        "buffers AWS and Google set, that is visible up to tens of MiB (the A3 Mega series "
        "grows nine times slower per byte below 16 MiB). NCCL's tuner leaves the fill out; the "
        "time here includes it.",
        "- **Racks.** A GB200 NVL72 rack is one NCCL node of 72 GPUs (multi-node NVLink); "
        "traffic between racks crosses the InfiniBand network at 72 NICs a rack. Inside a rack "
        "NCCL runs NVLS, across racks NVLS-tree; its tuner prices the NVLS graph's 32 channels "
        "but launches 24 CTAs on one rack (32 on two, 24 on more with 400 Gbit/s NICs), and the "
        "time here follows the CTAs (`costmodels/nccl/constants.py` NVLS_CTAS). A GB300 NVL72 "
        "(Blackwell Ultra, `gb300-nvl72`) is the same 72-GPU NVLink 5 domain with one 800 Gb/s "
        "ConnectX-8 per GPU; `dgx-b300` is 8 B300 with eight 800 Gb/s NICs, `dgx-b200` 8 B200 "
        "with eight 400 Gb/s ConnectX-7.",
        "- **AMD nodes.** MI300X, MI325X and MI355X nodes are eight GPUs fully connected by "
        "Infinity Fabric (xGMI: seven links per GPU, 48 GB/s each as RCCL counts them). They "
        "run RCCL: its tuner's own tables pick ring or tree with LL or Simple (no LL128, NVLS or "
        "CollNet), and on one MI300X/MI325X node MSCCL's all-pairs programs take all-reduces of "
        "1 KiB-16 MiB. Presets `azure-nd-mi300x-v5` and `amd-mi355x-pollara` (Pensando Pollara "
        "400 NICs).",
        "- **One process per node.** nccl-tests run with `-g 8` (one process driving every GPU "
        "of a host, as most published tables) pay the host's enqueue per GPU instead of each "
        "GPU's launch: `commatlas collective --gpus-per-process all`.",
        "- **Old and consumer nodes.** A DGX-1's V100s are a hybrid cube mesh, not a switch: "
        "two of them share 2 NVLinks (40 GB/s), four 80 GB/s, eight 120 GB/s. Eight GeForce "
        "boards on a dual-socket PCIe server ring at 10 GB/s, the socket link's rate.",
        "",
        "## How close it is",
        "",
        f"Against the dev series, preset only (in-sample: the EFA curve, TCPXO's hop latency and "
        f"the fixed costs were fitted on them): EFA all-reduce over 1-64 nodes, mean "
        f"|busbw error| {100 * dev['efa']['mean']:.1f} % (largest {100 * dev['efa']['max']:.1f} "
        f"%); A3 Mega from 1 MiB {100 * dev['gcp_big']['mean']:.1f} % (largest "
        f"{100 * dev['gcp_big']['max']:.1f} %), below 1 MiB {100 * dev['gcp_small']['mean']:.1f}"
        f" %. Clouds change their plugins and profiles often; calibrate on your own "
        f"nccl-tests ({c.record_link(tax, 'nccl')} model, "
        "[calibration guide](calibrate-cluster.md)) before trusting a prediction at scale.",
        "",
        *c.reproduce([
            "- `commatlas clusters` and `commatlas clusters aws-p5` (every fact with its "
            "source).",
            "- `commatlas collective all-gather --cluster aws-p5 --gpus 64 --sizes 256MiB` (one "
            "cell of a question); `--gpu h200 --transport ib` override fields.",
            "- `commatlas collective all-reduce --cluster azure-nd-mi300x-v5 --nodes 2 --sizes "
            "1 MiB 1 GiB` (AMD: RCCL's choice per size).",
            "- `python benchmarks/cloud_networks.py` prints the dev-series errors above, and per "
            "dev log (Azure single-host, rccl-tests MI300X) the error from 1 MiB and below.",
        ]),
    ]  # fmt: skip
    return "\n".join(lines)


def files(tax: Taxonomy) -> Files:
    return {f"generated/guides/{SLUG}.md": page_text(tax)}
