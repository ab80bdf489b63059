"""Numbers of AMD RCCL's own performance model, each with the file of ROCm/rccl it was read from.

Read from ROCm/rccl at commit 0cbce2a7571c907554199fad7e905f16ec0a565c ("RCCL 2.21.5 for ROCm
6.3.0", CHANGELOG.md; makefiles/version.mk NCCL 2.21.5). RCCL keeps NCCL's tuner structure
(src/graph/tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime) but replaces NCCL's constants by
per-platform tables (``rcclTuningModel``, tuning.cc lines 69-261); a platform picks its table
with the ``tuning=`` option of its topology model in src/graph/rome_models.cc. The 8-GPU
fully connected gfx942 (MI300X/MI325X) platforms, rome_model_79, rome_model_81 and
rome_model_84 (connMatrix all ones, nLinks 7), all say ``tuning=5``; that table is below.
Times are microseconds, bandwidths GB/s, laid out by name rather than by RCCL's indices.

Project constants fitted on measurements are at the end, marked ``FITTED``.
"""

from __future__ import annotations

# src/graph/topo.h lines 31-33 and topo.cc ncclTopoXGMISpeed (lines 257-265): RCCL's figure for
# one xGMI link (GB/s per direction), as its topology counts it: gfx90a 36, gfx94x 48, else 24.
XGMI_LINK_GBPS = {"cdna3": 48.0}

# tuning.cc lines 57-60, baseLat: fixed cost of one call (us) for tree and ring alike.
BASE_LATENCY_US = {"ll": 12.0, "ll128": 12.0, "simple": 17.0}

# tuning_model_5 (tuning.cc lines 224-252). hwLat rows: "xgmi" is RCCL's NVLINK row (an xGMI
# link is LINK_NVL in RCCL's topology), "pci", "net"; per algorithm and protocol (us).
HOP_LATENCY_US = {
    "xgmi": {"tree": {"ll": 0.9, "ll128": 0.0, "simple": 2.3},
             "ring": {"ll": 0.8, "ll128": 0.0, "simple": 2.1}},
    "pci": {"tree": {"ll": 2.2, "ll128": 2.2, "simple": 5.7},
            "ring": {"ll": 2.2, "ll128": 2.2, "simple": 5.7}},
    "net": {"tree": {"ll": 10.5, "ll128": 0.0, "simple": 25.0},
            "ring": {"ll": 9.5, "ll128": 0.0, "simple": 320.0}},
}  # fmt: skip
# bwRatio: multiplier of the bus bandwidth, [<= 2 nodes, > 2 nodes] (one node included in the
# first: tuning.cc line 377 "if (nNodes <= 2)").
BW_RATIO = {
    "tree": {"ll": (0.06, 0.06), "ll128": (0.0, 0.0), "simple": (0.11, 0.59)},
    "ring": {"ll": (0.08, 0.08), "ll128": (0.0, 0.0), "simple": (1.0, 1.0)},
}  # fmt: skip
# treeCorrectionFactor / ringCorrectionFactor, per protocol, index log2i(bytes >> 6) clipped at
# 26 (ncclTopoGetAlgoTime, tuning.cc lines 650-658): tree always, ring only on several nodes.
TREE_CORRECTION = {
    "ll": (0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 1.0, 0.9, 1.0, 1.0,
           0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1),
    "simple": (0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.7,
               1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8),
}  # fmt: skip
RING_CORRECTION = {
    "ll": (0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 0.2, 1.0, 0.4, 0.4,
           0.1, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1),
    "simple": (0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
               0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 1.0, 1.0, 1.0),
}  # fmt: skip
CORRECTION_LAST = 26  # sizes from 64 B x 2^26 (4 GiB) on take the last entry
# tuning.cc line 381: ring LL broadcast / reduce on gfx94 within one node: bus bandwidth x 1.65.
RING_LL_ROOTED_GFX94 = 1.65
# tuning.cc getNetOverhead (lines 294-301): per ring step posting to the NIC, x 3 for Simple.
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0}
# Rules read from the same file:
# * line 365: tree with Simple is skipped on gfx94 when every rank is in one node;
# * lines 509-518: LL128 is enabled by default only on gfx90a (MI200) with a tuning table; on
#   gfx942/gfx950 it stays off (pEnable = 0);
# * lines 357-360: broadcast and reduce run ring only; all-gather and reduce-scatter ring (NVLS
#   and CollNet have no AMD counterpart); tree serves all-reduce;
# * no ring "plateau" factor (NCCL's 1.4 x latency) in the HIP build (line 649 ff.).

# MSCCL (tools/msccl-algorithms, loaded by src/misc/msccl/msccl_lifecycle.cc when the topology
# model says mscclEnabled=1: rome_model_79, the 8 x gfx942 node without NICs, i.e. one node
# once NCCL's topology trim has dropped the unused NICs): "allpairs" all-reduce programs for 8
# ranks take the call before RCCL's tuner when the size lies in their window and the element
# count divides by the program's chunks per loop (float: 256 or 512 elements = 1 or 2 KiB).
# Windows in bytes, out-of-place files (allreduce-allpairs-8n-*-op.xml minBytes/maxBytes):
MSCCL_ALLREDUCE_WINDOWS = (
    ("ll", 0, 65536, 1024),  # allreduce-allpairs-8n-ll-32tb-op.xml, nchunksperloop 256
    ("ll", 65537, 524287, 2048),  # allreduce-allpairs-8n-ll-64tb-op.xml, 512
    ("simple", 524288, 16777216, 2048),  # allreduce-allpairs-8n-simple-op.xml, 512
)  # (protocol, minBytes, maxBytes, float bytes per loop)
MSCCL_RANKS = 8
# MSCCL++ (src/init.cc lines 96-111, 2034-2040: all-reduce up to RCCL_MSCCLPP_THRESHOLD, 1 MiB)
# needs every process on its own host (msccl_lifecycle.cc mscclppCommCompatible ->
# allProcessHostsUnique), so the 8 ranks of one node do not take it: not modelled.

# --- FITTED: the realised time on AMD fabrics -------------------------------------------------
# RCCL's tuner constants choose the (algorithm, protocol); they are not the time (its LL bus
# ratio 0.08 only ranks LL against Simple). The realised time uses NCCL's structure with these,
# chosen on the 1-node 8 x MI300X rows of rccl-mi300x-dev.csv (copied to
# costmodels/data/rccl-mi300x-dev.csv; benchmarks/cloud_networks.py prints the errors), each
# read off the regime where it alone sets the time (in-sample):
# * ring LL, 8-512 B (below MSCCL's 1 KiB loop): 16.3-23.4 us, mean 20.1 = NCCL's 8 us launch +
#   14 steps x 0.85 us (RCCL's own table says 0.8 per xGMI step);
# * ring Simple, 32 MiB-8 GiB: 315.7 GB/s busbw at 8 GiB = 0.94 x RCCL's 7 x 48 GB/s, and about
#   55 us on top of the bytes at every size (32 MiB: 246 us measured, 186 us of bytes) = 8 us +
#   14 steps x 3.4 us;
# * MSCCL allpairs LL, 1 KiB-256 KiB: 13.7 us flat to 64 KiB, 17.5 at 256 KiB;
# * MSCCL allpairs Simple, 512 KiB-16 MiB: 150 us at 16 MiB, 36.7 at 2 MiB (8.1 us/MiB).
# Ring LL's share of the links is not visible on one node (MSCCL takes those sizes); NCCL's 0.5
# is kept.
# * on several nodes the xGMI links do not bound a Simple ring: 2 x 8 MI300X reach 357 GB/s busbw
#   at 16 GiB (8 x 400 Gbit/s RoCE at 0.9 = 360 GB/s per node), more than one node's 316. The
#   1-node share is a limit of the one-node ring, not of the links; across nodes the links'
#   signalled 64 GB/s per direction (128 GB/s bidirectional per link, fabrics.py) = 64/48 of
#   RCCL's figure is taken, so the NICs bound the ring.
XGMI_SIGNAL_RATIO = 64.0 / 48.0
LAUNCH_US = 8.0
STARTUP_US = {"ll": 0.0, "ll128": 0.0, "simple": 0.0}
REAL_HOP_US = {"ll": 0.85, "ll128": 0.85, "simple": 3.4}
REAL_ETA = {"ll": 0.5, "ll128": 0.5, "simple": 0.94}
MSCCL_FIXED_US = {"ll": 5.6, "simple": 11.7}  # after the 8 us launch
MSCCL_ETA = {"ll": 0.24, "simple": 0.64}  # of RCCL's 7 x 48 GB/s bus bandwidth
