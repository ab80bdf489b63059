"""The cluster presets (costmodels.hardware.clusters.ClusterPreset), one source string per field.

Sources were read with the project's search tool; the page or repository is named in each
string. "NCCL sees" counts NICs the way NCCL's topology does: aws-ofi-nccl groups several EFA
devices into one NCCL NIC per GPU (its log prints "NIC group k device #0, #1"), so a p5's 32
EFA devices of 100 Gbit/s are 8 NICs of 400 Gbit/s to NCCL.
"""

from __future__ import annotations

from costmodels.hardware.cluster_preset import ClusterPreset

_SUPERPOD_H100 = (
    "NVIDIA DGX SuperPOD H100 reference architecture (docs.nvidia.com, 'Key Components' and "
    "'Network Fabrics'): NDR 400 Gbps InfiniBand compute fabric, rail-aligned scalable units of "
    "32 nodes; DGX H100: four OSFP ports serving eight single-port ConnectX-7, up to 400 Gb/s "
    "(DGX BasePOD RA 'Core Components'), dual Intel Xeon Platinum 8480C"
)
_SHARP_Q2 = ("NVIDIA SHARP v3.13 'General Information': Quantum and Quantum-2 switches support "
             "SHARP streaming aggregation")  # fmt: skip
_AWS_EFA_P5 = (
    "AWS EC2 docs 'Maximize network bandwidth ... with EFA' (p5-efa): 'P5 and P5e instances "
    "support up to 32 network cards and can provide up to 3,200 Gbps'; aws-ofi-nccl groups the "
    "EFA devices per GPU (NIC groups in its log, NVIDIA/nccl#1597), so NCCL sees 8 NICs of 400 "
    "Gbit/s; transport: aws-ofi-nccl platform 'p5/p5e' (RDMA protocol, all NCCL protocols)"
)
_GCP_NET = "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth"

CLUSTERS: dict[str, ClusterPreset] = {
    c.name: c
    for c in (
        ClusterPreset(
            "dgx-a100-superpod", "NVIDIA DGX SuperPOD with DGX A100", "A100 80GB SXM", 8, 8, 200,
            "ib",
            {"gpu": "DGX A100 (8 A100 SXM on NVSwitch); NVIDIA DGX SuperPOD DGX A100 reference "
                    "architecture RA-09950-001 (2020)",
             "nics": "the DGX SuperPOD H100 RA: DGX H100 has '2X faster networking @ 400 Gbps' "
                     "than DGX A100, i.e. 200 Gb/s HDR per compute NIC; 8 compute NICs, one per "
                     "GPU, as on DGX H100",
             "transport": "HDR InfiniBand with GPUDirect RDMA (NCCL IB plugin)",
             "sharp": "Quantum HDR switches with SHARP (" + _SHARP_Q2 + ")"},
            sharp=True, estimates=("nics (count)", "gpu (40 or 80 GB variant)"),
        ),
        ClusterPreset(
            "dgx-h100-superpod", "NVIDIA DGX SuperPOD with DGX H100", "H100 SXM", 8, 8, 400, "ib",
            {"gpu": _SUPERPOD_H100, "nics": _SUPERPOD_H100, "transport": _SUPERPOD_H100,
             "sharp": "Quantum-2 NDR switches: " + _SHARP_Q2},
            sharp=True,
        ),
        ClusterPreset(
            "azure-nd-a100-v4", "Azure ND A100 v4 (Standard_ND96asr_v4)", "A100 40GB SXM", 8, 8,
            200, "ib",
            {"gpu": "MicrosoftDocs/azure-docs nd-a100-v4-series-summary: eight A100 40GB, NVLink "
                    "3.0", "nics": "same page: each GPU its own dedicated 200 Gb/s HDR "
                    "InfiniBand connection, 1.6 Tb/s per VM, GPUDirect RDMA",
             "transport": "InfiniBand, GPUDirect RDMA (same page)",
             "cpu": "same page: 96 AMD EPYC 7V12 (Rome) cores"},
            cpu_vendor="amd",
        ),
        ClusterPreset(
            "azure-nd-h100-v5", "Azure ND H100 v5 (Standard_ND96isr_H100_v5)", "H100 SXM", 8, 8,
            400, "ib",
            {"gpu": "MicrosoftDocs/azure-docs nd-h100-v5-series-summary: eight H100, NVLink 4.0",
             "nics": "same page: each GPU its own 400 Gb/s Quantum-2 CX7 InfiniBand, 3.2 Tb/s "
                     "per VM, GPUDirect RDMA", "transport": "InfiniBand (same page)",
             "cpu": "same page: 4th Gen Intel Xeon Scalable"},
        ),
        ClusterPreset(
            "azure-nd-h200-v5", "Azure ND H200 v5 (Standard_ND96isr_H200_v5)", "H200 SXM", 8, 8,
            400, "ib",
            {"gpu": "microsoft/aspire AksNodeVmSizes: Standard_ND96isr_H200_v5, 8 GPUs (H200)",
             "nics": "taken as ND H100 v5 (8 x 400 Gb/s NDR per VM); the H200 v5 page was not "
                     "found in a stored copy", "transport": "InfiniBand, as ND H100 v5"},
            estimates=("nics", "transport"),
        ),
        ClusterPreset(
            "aws-p4d", "AWS p4d.24xlarge", "A100 40GB SXM", 8, 4, 100, "efa-sendrecv",
            {"gpu": "AWS blog 'Amazon EC2 P4d instances deep dive' (2020): 8 x 40 GB A100 with "
                    "NVSwitch, dual Intel Cascade Lake 8275CL",
             "nics": "same blog: 400 Gbps EFA with GPUDirect RDMA (4 EFA devices of 100 Gbps, "
                     "aws-ofi-nccl's p4d-24xl-topo.xml)",
             "transport": "aws/aws-ofi-nccl src/platform-aws.cpp: p4d default protocol SENDRECV, "
                          "NCCL_PROTO=simple forced (aws-ofi-nccl#982)"},
            estimates=("nics (4 x 100 split)",),
        ),
        ClusterPreset(
            "aws-p5", "AWS p5.48xlarge", "H100 SXM", 8, 8, 400, "efa",
            {"gpu": "Hugging Face / AWS guide as summarised by agenticdaily.ai: p5.48xlarge, "
                    "eight H100", "nics": _AWS_EFA_P5, "transport": _AWS_EFA_P5},
            estimates=("nics (grouping per GPU)",),
        ),
        ClusterPreset(
            "aws-p5e", "AWS p5e.48xlarge", "H200 SXM", 8, 8, 400, "efa",
            {"gpu": "AWS P5e: eight H200 (aws-ofi-nccl platform 'p5/p5e' shares p5's settings)",
             "nics": _AWS_EFA_P5, "transport": _AWS_EFA_P5},
            estimates=("gpu", "nics (grouping per GPU)"),
        ),
        ClusterPreset(
            "gcp-a3-high", "Google Cloud A3 High (a3-highgpu-8g)", "H100 SXM", 8, 4, 200, "tcpx",
            {"gpu": f"{_GCP_NET}: A3 High has NVIDIA H100",
             "nics": f"{_GCP_NET}: A3 High up to 1,000 Gbps; GoogleCloudPlatform/container-engine-"
                     "accelerators gpudirect-tcpxo/nccl-config.yaml: 4 GPU NICs (eth1-eth4)",
             "transport": "GPUDirect-TCPX (same recipe: NCCL_ALGO=Ring, NCCL_PROTO=Simple)"},
            estimates=("nics (200 Gbit/s each)",),
        ),
        ClusterPreset(
            "gcp-a3-mega", "Google Cloud A3 Mega (a3-megagpu-8g)", "H100 SXM", 8, 8, 200, "tcpxo",
            {"gpu": f"{_GCP_NET}: A3 Mega has NVIDIA H100",
             "nics": f"{_GCP_NET}: A3 Mega up to 1,600 Gbps; 8 x 200 Gb/s GPU NICs (the dev "
                     "series gcp-a3mega-2node-allreduce-dev.csv header, GCP documentation)",
             "transport": "GPUDirect-TCPXO (container-engine-accelerators gpudirect-tcpxo)"},
        ),
        ClusterPreset(
            "gcp-a3-ultra", "Google Cloud A3 Ultra (a3-ultragpu-8g)", "H200 SXM", 8, 8, 400,
            "roce",
            {"gpu": f"{_GCP_NET}: A3 Ultra has H200 GPUs",
             "nics": f"{_GCP_NET}: eight ConnectX-7 NICs, 3,200 Gbps, one aligned with each GPU",
             "transport": "GoogleCloudPlatform/cluster-toolkit release v1.44.1: 'dedicated CX-7 "
                          "networking with RDMA support via RoCE'"},
        ),
        ClusterPreset(
            "oci-h100-roce", "Oracle Cloud BM.GPU.H100.8", "H100 SXM", 8, 16, 200, "roce",
            {"gpu": "blogs.oracle.com MLPerf v4.1 post: BM.GPU.H100.8, eight H100-SXM5-80GB",
             "nics": "OCI HPC scripts (ib_write_lat.sh HCA list): 16 RDMA HCAs on BM.GPU.H100.8; "
                     "200 Gb/s each (3.2 Tb/s per node) not confirmed in a stored page",
             "transport": "same blog: RoCEv2 with NVIDIA ConnectX NICs; OCI supercluster blog: "
                          "nonblocking, full bisection bandwidth"},
            estimates=("nics (200 Gbit/s each)",),
        ),
        ClusterPreset(
            "coreweave-h100-ib", "CoreWeave HGX H100 with InfiniBand", "H100 SXM", 8, 8, 400,
            "ib",
            {"gpu": "CoreWeave HGX H100 nodes (8 GPUs)",
             "nics": "docs.coreweave.com 'HPC Interconnect': NVIDIA Quantum-2 InfiniBand, "
                     "rail-optimised, non-blocking fat tree; one 400 Gb/s NDR NIC per GPU taken "
                     "as on the DGX H100 design it follows",
             "transport": "same page: GPUDirect RDMA over InfiniBand",
             "sharp": "same page: 'SHARP optimizations'; " + _SHARP_Q2},
            sharp=True, estimates=("nics (one 400G per GPU)",),
        ),
        ClusterPreset(
            "gb200-nvl72", "NVIDIA GB200 NVL72 racks", "GB200", 72, 72, 400, "ib",
            {"gpu": "72 Blackwell GPUs in one NVLink domain (NVIDIA; docs.nvidia.com DGX "
                    "SuperPOD GB200 RA: a rack-scale, 72 GPU configuration)",
             "nics": "MLPerf Inference v6.1 Crusoe GB200-NVL72 system: 4 x ConnectX-7 per 4-GPU "
                     "node (18 nodes per rack: 72 NICs); DGX SuperPOD GB200 RA: NDR 400 Gbps "
                     "InfiniBand", "transport": "InfiniBand between racks (same RA)",
             "cpu": "Grace (Arm) hosts"},
            note="GPUs per node is the NVLink domain: NCCL treats the rack as one node (MNNVL); "
            "traffic between racks crosses the InfiniBand network",
        ),
        # issue 39: Blackwell and Blackwell Ultra systems
        ClusterPreset(
            "dgx-b200", "NVIDIA DGX B200", "B200", 8, 8, 400, "ib",
            {"gpu": "docs.nvidia.com DGX B200 User Guide 'Introduction': '8 x NVIDIA B200 GPUs "
                    "that provide 1,440 GB total GPU memory', 2 x fifth-generation NVLink "
                    "switches, 14.4 TB/s aggregate",
             "nics": "same guide: 4 x OSFP ports for 8 x NVIDIA ConnectX-7 Single Port Cards, "
                     "InfiniBand (default) up to 400Gbps",
             "transport": "InfiniBand (same guide)",
             "cpu": "same guide: 2 x Intel Xeon 8570"},
        ),
        ClusterPreset(
            "dgx-b300", "NVIDIA DGX B300", "B300", 8, 8, 800, "ib",
            {"gpu": "aiwiki.ai DGX B300: eight B300 SXM GPUs, 2.3 TB of HBM3e, Intel Xeon "
                    "6776P; acecloud.ai 'NVIDIA HGX B300': 8x Blackwell Ultra GPUs, NVLink 5, "
                    "14.4 TB/s NVLink Switch bandwidth",
             "nics": "acecloud.ai 'NVIDIA HGX B300': 8x ConnectX-8 SuperNICs on the baseboard, "
                     "up to 800 Gb/s per GPU; vengineer.hatenablog.com (DGX B300 User Guide "
                     "figures): 800GbE x 8 on the front",
             "transport": "InfiniBand (Quantum-X800) or Spectrum-X Ethernet; InfiniBand taken, "
                          "as on the DGX B200",
             "cpu": "Intel Xeon 6776P (aiwiki.ai DGX B300)"},
            estimates=("transport (IB or Ethernet per site)",),
        ),
        ClusterPreset(
            "gb300-nvl72", "NVIDIA GB300 NVL72 racks", "GB300", 72, 72, 800, "ib",
            {"gpu": "72 Blackwell Ultra GPUs and 36 Grace CPUs in one NVLink domain "
                    "(aiwiki.ai GB300 NVL72; glennklockwood.com B300: '18 NVLink Switches at "
                    "130 TB/s')",
             "nics": "glennklockwood.com B300: GB300 NVL72 has '72 ConnectX-8 NICs'; "
                     "vendordeep.com GB300 NVL72 report: each GPU has a ConnectX-8 SuperNIC at "
                     "800 Gb/s, Quantum-X800 InfiniBand or Spectrum-X Ethernet",
             "transport": "InfiniBand (Quantum-X800) between racks, taken as on GB200 NVL72",
             "cpu": "Grace (Arm) hosts"},
            note="GPUs per node is the NVLink domain: NCCL treats the rack as one node (MNNVL); "
            "traffic between racks crosses the InfiniBand network",
            estimates=("transport (IB or Ethernet per site)",),
        ),
        ClusterPreset(
            "azure-nd-mi300x-v5", "Azure ND MI300X v5 (Standard_ND96isr_MI300X_v5)", "MI300X",
            8, 8, 400, "ib",
            {"gpu": "MicrosoftDocs/azure-docs nd-mi300x-v5-series: 8 MI300X, 192 GB each; the "
                    "8 GPUs fully connected by xGMI (costmodels/nccl/fabrics.py)",
             "nics": "same page: 'Infiniband: Supported, GPUDirect RDMA, 8x400 Gigabit NDR'",
             "transport": "InfiniBand with GPUDirect RDMA (same page); RCCL's IB verbs",
             "cpu": "not stated on the stored page: Intel taken (estimate)"},
            estimates=("cpu",),
        ),
        ClusterPreset(
            "amd-mi355x-pollara", "AMD Instinct MI355X nodes with Pensando Pollara 400 NICs",
            "MI355X", 8, 8, 400, "roce",
            {"gpu": "8 MI355X per OAM platform, fully connected xGMI (costmodels/nccl/fabrics.py;"
                    " 8-GPU OCP trays: jaredwatkins.com MI350 series)",
             "nics": "AMD Pensando Pollara 400 AI NIC: 'up to 400 Gigabit per second (Gbps) "
                     "Ethernet', UEC-ready RDMA, PCIe Gen5 x16 (amd.com Pensando page); one per "
                     "GPU assumed, as AMD's reference nodes (estimate)",
             "transport": "RoCE v2 through RCCL's IB verbs (AMD's ANP plugin and UEC transport "
                          "are not modelled: estimate)",
             "cpu": "AMD EPYC hosts (MLPerf Inference v6.0 AMD MI355X systems: EPYC 9575F)"},
            cpu_vendor="amd", estimates=("nics (count)", "transport"),
        ),
        ClusterPreset(
            "dgx-1-v100", "NVIDIA DGX-1 with V100", "V100 SXM2", 8, 4, 100, "ib",
            {"gpu": "NVIDIA DGX-1 with Tesla V100 system architecture white paper: 8 V100 in a "
                    "hybrid cube-mesh", "nics": "same paper: four 100 Gb InfiniBand NICs "
                    "(ConnectX-4 EDR, iptronics.com)", "transport": "EDR InfiniBand",
             "topology": "link counts: microsoft/msccl-tools dgx1()"},
        ),
        ClusterPreset(
            "dgx-2-v100", "NVIDIA DGX-2", "V100 SXM2", 16, 8, 100, "ib",
            {"gpu": "pcper.com 'NVIDIA Announces DGX-2 with 16 GV100s & 8 100Gb NICs' (2018): "
                    "sixteen 32 GB V100 on NVSwitch (V100 SXM3: V100 SXM2 compute used)",
             "nics": "same article: eight EDR InfiniBand NICs", "transport": "EDR InfiniBand"},
            fabric="dgx2-nvswitch",
        ),
        ClusterPreset(
            "pcie-8gpu", "8 consumer GPUs on PCIe (dual-root server)", "RTX 2080 Ti", 8, 1, 10,
            "socket",
            {"gpu": "8 x GeForce RTX 2080 Ti, PCIe Gen 3", "topology": "Supermicro SYS-4029GP-TRT "
                    "dual-root layout (supermicro.org.cn); no peer access across sockets "
                    "(server-gear.com deviceQuery)",
             "nics": "one 10 GbE port (the onboard LAN of such servers): estimate",
             "transport": "TCP sockets (GeForce boards have no GPUDirect RDMA)"},
            fabric="pcie-dual-root", estimates=("nics", "transport"),
        ),
    )
}  # fmt: skip
