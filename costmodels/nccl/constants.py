"""Numbers of NCCL's own performance model, each with the file of NVIDIA/nccl it was read from.

Read from NVIDIA/nccl at version 2.30.7 (makefiles/version.mk; snapshot of the master branch,
2026). The numbers are NCCL's; the tables are laid out here by name (algorithm, protocol,
hardware) rather than by NCCL's array indices. Times are microseconds and bandwidths GB/s
(1e9 bytes/s) as in NCCL; :mod:`costmodels.nccl.tuner` converts to SI.

Project estimates (not NCCL's) are at the end, each marked ``ESTIMATE`` with its reasoning.
"""

from __future__ import annotations

ALGORITHMS = ("ring", "tree", "collnet-direct", "collnet-chain", "nvls", "nvls-tree", "pat")
PROTOCOLS = ("ll", "ll128", "simple")
ARCHES = ("volta", "ampere", "hopper", "blackwell")  # NCCL's compute-capability classes

# src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLatencies: fixed cost of one call (us).
BASE_LATENCY_US: dict[str, dict[str, float]] = {
    "tree": {"ll": 6.8, "ll128": 14.0, "simple": 8.4},
    "ring": {"ll": 6.6, "ll128": 14.0, "simple": 8.4},
    "collnet-direct": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
    "collnet-chain": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
    "nvls": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
    "nvls-tree": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
    "pat": {"ll": 8.0, "ll128": 8.0, "simple": 8.0},
}

# src/graph/tuning.cc, ncclTunerConstantsDefaults.hwLatencies: latency of one step (hop) on
# NVLink, PCIe or the network (us), per algorithm and protocol. Zero where NCCL has no such pair.
HOP_LATENCY_US: dict[str, dict[str, dict[str, float]]] = {
    "nvlink": {
        "tree": {"ll": 0.6, "ll128": 1.25, "simple": 4.0},
        "ring": {"ll": 0.6, "ll128": 1.9, "simple": 3.4},
        "collnet-direct": {"ll": 0.0, "ll128": 0.0, "simple": 3.7},
        "collnet-chain": {"ll": 0.0, "ll128": 0.0, "simple": 2.8},
        "nvls": {"ll": 0.0, "ll128": 0.0, "simple": 25.0},
        "nvls-tree": {"ll": 0.0, "ll128": 0.0, "simple": 25.0},
        "pat": {"ll": 0.0, "ll128": 0.0, "simple": 4.0},
    },
    "pci": {
        "tree": {"ll": 1.0, "ll128": 1.9, "simple": 4.0},
        "ring": {"ll": 1.0, "ll128": 2.5, "simple": 5.7},
        "collnet-direct": {"ll": 0.0, "ll128": 0.0, "simple": 3.7},
        "collnet-chain": {"ll": 0.0, "ll128": 0.0, "simple": 2.8},
        "nvls": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
        "nvls-tree": {"ll": 0.0, "ll128": 0.0, "simple": 0.0},
        "pat": {"ll": 0.0, "ll128": 0.0, "simple": 4.0},
    },
    "net": {
        "tree": {"ll": 5.0, "ll128": 8.5, "simple": 14.0},
        "ring": {"ll": 2.7, "ll128": 4.0, "simple": 14.0},
        "collnet-direct": {"ll": 0.0, "ll128": 0.0, "simple": 31.0},
        "collnet-chain": {"ll": 0.0, "ll128": 0.0, "simple": 30.0},
        "nvls": {"ll": 0.0, "ll128": 0.0, "simple": 18.0},
        "nvls-tree": {"ll": 0.0, "ll128": 0.0, "simple": 20.9},
        "pat": {"ll": 0.0, "ll128": 0.0, "simple": 14.0},
    },
}

# src/graph/tuning.cc, llMaxBws: the LL protocol's ceiling (GB/s). One node: by GPU class;
# several nodes: by CPU vendor, index 0 Intel, 1 AMD, for 2 nodes and for more than 2.
LL_MAX_BW_ONE_NODE = {"volta": 39.0, "ampere": 87.7, "hopper": 141.0, "blackwell": 282.0}
LL_MAX_BW_NODES = {"intel": {2: 39.0, 3: 20.4}, "amd": {2: 22.5, 3: 19.0}}

# src/graph/tuning.cc: per-channel ceilings (GB/s) for 1 node, 2 nodes, more than 2 nodes.
PER_CHANNEL_RING_LL128 = {
    "volta": (20.0, 20.0, 20.0),
    "ampere": (20.0, 20.0, 20.0),
    "hopper": (36.7, 36.7, 36.7),
    "blackwell": (40.0, 40.0, 40.0),
}
PER_CHANNEL_TREE_LL128 = {
    "volta": (20.0, 20.0, 20.0),
    "ampere": (20.0, 20.0, 20.0),
    "hopper": (36.7, 36.7, 29.0),
    "blackwell": (55.6, 31.67, 20.0),
}
PER_CHANNEL_TREE = {
    "volta": (26.5, 18.5, 10.0),
    "ampere": (24.0, 23.6, 17.8),
    "hopper": (38.7, 41.4, 36.0),
    "blackwell": (70.0, 42.8, 24.0),
}
PER_CHANNEL_NVLS_TREE = {
    "volta": (26.5, 18.5, 10.0),
    "ampere": (24.0, 23.6, 17.8),
    "hopper": (0.0, 57.7, 45.5),
    "blackwell": (0.0, 96.0, 80.0),
}

# src/graph/tuning.cc, nvlsEfficiency: the share of the NVLink rate NVLS delivers.
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}

# src/graph/tuning.cc, ncclTopoTuneModel "model refinements" (fractions of the bus bandwidth).
RING_LL_FRACTION = 0.5  # LL sends 8 bytes of data per 16-byte line (4 data + 4 flag, twice)
LL128_FRACTION = 0.92  # 120 data bytes of every 128-byte line, rounded down by NCCL
TREE_FRACTION = 0.92  # tree all-reduce
TREE_LL_DIVISOR = 3.8  # tree with LL: bandwidth / 3.8
TREE_LL128_FRACTION_ONE_NODE = 7.0 / 9.0
TREE_LL128_FRACTION_NODES = 120.0 / 128.0
PAT_FRACTION = 0.75
TREE_PATTERN_FRACTION = 0.85  # tree busBw x .85 when maxTreePattern == NCCL_TOPO_PATTERN_TREE
COLLNET_HOPPER_FRACTION = 0.85  # CollNet Direct on compute capability >= 9.0
COLLNET_GATHER_NET_FRACTION = 0.9  # CollNet all-gather / reduce-scatter: 0.9 x network
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0}  # getNetOverhead: per ring step posting to the NIC
NET_OVERHEAD_SIMPLE_FACTOR = 3.0  # ... times 3 with the Simple protocol
RING_PLATEAU = {"volta": 1.9, "other": 1.4}  # ncclTopoGetAlgoTime: multi-node ring/Simple
COLLNET_ARITY_LATENCY_US = 0.4  # "arity serialization latency" per local rank, CollNet Direct
PAT_PER_RANK_US = 2.8  # PAT latency: linear part per rank
PAT_INTER_DIVISOR = 3.5  # PAT latency: network latency / 3.5 per tree level

# src/graph/tuning.cc, treeCorrectionFactor: tree all-reduce bandwidth multipliers per protocol
# for sizes 64 B x 2^i, i = 0..23 (i = floor(log2(bytes / 64))); outside that range 1.
TREE_CORRECTION = {
    "ll": (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5,
           0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "ll128": (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6,
              0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0),
    "simple": (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
               0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9),
}  # fmt: skip
TREE_CORRECTION_MAX_INDEX = 23  # ncclTopoGetAlgoTime applies the table for 0 <= i < 23

# src/graph/topo.h: NCCL's bandwidth of one NVLink (GB/s, per direction) by GPU generation,
# below the signalling rate (25 GB/s per NVLink 2-4 link, 50 per NVLink 5 link).
NVLINK_LINK_GBPS = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}
# src/graph/topo.cc kvDictPciGen and "bw = width * speed / 80": PCIe x16 in GB/s as NCCL
# computes it from the lane rate (60 / 120 / 240 x 100 Mbit/s per lane for Gen 3 / 4 / 5).
PCIE_X16_GBPS = {3: 16 * 60 / 80.0, 4: 16 * 120 / 80.0, 5: 16 * 240 / 80.0}

# src/graph/search.cc: the per-channel speeds (GB/s) NCCL's ring search tries, one node.
SPEEDS_INTRA = {
    "volta": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    "ampere": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    "hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
}
DUP_CHANNELS_MIN_GBPS = 25.0  # search.cc ncclTopoDupChannels: no doubling below 25 GB/s ...
DUP_CHANNELS_MIN_GBPS_SM90 = 50.0  # ... nor, after Ampere, below 50 GB/s with > 4 channels
MAX_CHANNELS = 64  # src/include/device.h MAXCHANNELS
NCCL_STEPS = 8  # src/include/device.h: a channel's buffer holds 8 steps
DEFAULT_BUFFSIZE = 4 << 20  # src/init.cc DEFAULT_BUFFSIZE (Simple protocol)
NVLS_MAX_ARITY = 32  # src/include/device.h NCCL_MAX_NVLS_ARITY: NVLS for AG/RS up to 32 GPUs
COLLNET_MAX_LOCAL_RANKS = 8  # enqueue.cc: CollNet needs <= NCCL_MAX_DIRECT_ARITY + 1 GPUs/node

# src/graph/tuning.cc from 2.7.5 to 2.17.1 (2.8.4 line 124, 2.17.1 line 153): "if (compCap80)
# busBw = std::min(busBw, 235.0f)", NVIDIA's ceiling on an A100's bus bandwidth for every
# algorithm and protocol (before the protocol's own share); 2.18.1 dropped the line. It is kept
# here for A100 rings and trees (GB/s) in both views: the realised time (what an A100 delivers;
# the superbench logs, Dec 2021, ran a NCCL of that range) and the choice, as those versions made
# it (with the ceiling only in the time, a faster --intra could pick a pair that runs slower).
AMPERE_BUS_CEILING_GBPS = 235.0
# --- project constants from measurements ---------------------------------------------------
# Fixed costs of one call, one GPU per process (nccl-tests -g 1, torchrun): chosen together on
# the shipped OKE 2 x 8 A100 RoCE log (tests/costmodels/data/nccl_tests, all sizes) and the dev
# series gcp-a3mega-2node-allreduce-dev.csv (all sizes; its network hop below), minimising the
# mean relative error of the time over both (benchmarks/cloud_networks.py --fit-fixed):
# LAUNCH_OVERHEAD_US is the device-side launch of a call, PROTOCOL_STARTUP_US the start-up each
# protocol adds after it. They are added after NCCL's choice (NCCL's tuner has neither).
LAUNCH_OVERHEAD_US = 8.0
PROTOCOL_STARTUP_US = {"ll": 4.0, "ll128": 5.0, "simple": 5.0}
# One process driving 8 GPUs (nccl-tests -g 8, the shipped superbench 8 x A100 logs): the host
# enqueues the 8 GPUs' work for 34.2 us per call (mean of the four zero-byte rows of the
# all-reduce log: 35.20, 34.05, 34.18, 33.50 us; NCCL communicates nothing at 0 bytes), which
# overlaps the device's fixed latency; the protocols' start-up in that harness (LL 20, LL128
# 40, Simple 40 us) was chosen on those logs' rows from 1 MiB (in-sample).
MULTI_GPU_PROCESS_HOST_US = 34.23
MULTI_GPU_PROCESS_STARTUP_US = {"ll": 20.0, "ll128": 40.0, "simple": 40.0}
# Issue 40: below 1 MiB that start-up grows with the size (the superbench all-reduce takes
# 34-36 us from 0 B to 64 KiB, the host's cost alone, and 60 us at 512 KiB): startup x
# min(1, n / 1 MiB). From 1 MiB, where the start-ups were chosen, nothing changes.
MULTI_GPU_PROCESS_STARTUP_RAMP_BYTES = 2**20
# The same harness on Hopper / Blackwell (issue 40; Azure's ND H100 v5 with NVLS forced, NCCL
# 2.18.5, 8 GPUs, and ND GB200 v6 with Ring forced, NCCL 2.25.1, 4 GPUs of an NVL72, both -g N:
# costmodels/data/azure-nccl-singlenode-h100-gb200-dev.csv, all sizes, in-sample): the host
# launches each GPU's kernel itself, so the device's launch is part of the host's cost, which is
# HARNESS_HOST_PER_GPU_US per GPU driven; the start-ups are shorter than the superbench logs'
# (a newer NCCL). Chosen by grid search minimising the larger of the two logs' mean |error| below
# and from 1 MiB (benchmarks/cloud_networks.py prints them). AMD GPUs take these too (no -g log).
HARNESS_HOST_PER_GPU_US = 3.0
HARNESS_STARTUP_US = {"ll": 4.0, "ll128": 5.0, "simple": 5.0}
# NVLS at small sizes (the ND H100 v5 log): the time climbs from 25.6 us at 1 KiB to 42 us at
# 64 KiB, then stays there to 1 MiB: the first NVLS_FILL_CAP_BYTES of a message pay
# NVLS_FILL_DEPTH times the bytes' own time (a pipeline fill, priced in the time only).
NVLS_FILL_CAP_BYTES = 64 * 2**10
NVLS_FILL_DEPTH = 48.0
# NCCL launches this many NVLS CTAs (src/transport/nvls.cc lines 155-157, 209-214, and
# ncclNvlsTreeSm100Tuning lines 164-197 for several Blackwell nodes: 32 on 2 nodes with NICs of
# >= 48 GB/s, else 24 with NICs of 48-96 GB/s; src/enqueue.cc line 2085 uses them as the call's
# channels), while its tuner prices the NVLS graph's channels (up to 32, one per head GPU). The
# realised time spreads the graph's bandwidth over the CTAs: x min(1, CTAs / graph channels)
# (a GB200 NVL72 rack: 24 CTAs for 32 heads; 8-GPU H100/B200 nodes are not affected).
NVLS_CTAS = {"hopper": 16, "blackwell-one-domain": 24, "blackwell-two-nodes": 32,
             "blackwell-nodes": 24}  # fmt: skip
# ESTIMATE: share of a GPU's peak memory bandwidth a device copy achieves, from the project's
# H200 measurement (costmodels/data/h200_profile.json ceilings.copy_GBps, 4,179.9 GB/s read +
# written, against the H200 preset's 4.8 TB/s): the out-of-place all-gather stores its own block
# at this share of the GPU's memory bandwidth (ring_local.own_block_copy), on every GPU alike,
# and on one A100 node a ring's step 0 copies under P2P read at it (ring_local.p2p_read_step).
# An A100 measures 1,355 of its 1,555 GB/s, 0.871 too (PTsolvers/gpu-workshop-JuliaCon23
# scripts/perftest.jl, "memory copy", bytes read and written; its issue 7).
COPY_SHARE_OF_PEAK = 4179.935468013692 / 4800.0
# Latency of one peer of a point-to-point group (all-to-all, send/recv), us. NCCL has no tuner
# entry for point-to-point. The shipped superbench 8 x A100 all-to-all log's small sizes take
# about 87 us: the harness's 40 us Simple start-up after max(34.2 us host, 8 us launch + 7 peers
# x 5.6 us); the network figure is NCCL's Simple hop latency on the network
# (HOP_LATENCY_US["net"]["ring"]["simple"]).
P2P_PEER_LATENCY_US = {"nvlink": 5.6, "pci": 5.6, "net": 14.0}
# ESTIMATE: the CPU vendor, which selects NCCL's LL ceiling and network overhead on several
# nodes, is not part of a cluster description here; Intel x86 (NCCL's index 0) is assumed.
CPU_VENDOR = "intel"
