"""NVIDIA's published HybridEP measurements (costmodels/data/hybridep-nvidia.csv) against the
``--moe-dispatcher hybridep`` model of costmodels/llm/moe_dispatch.py, row by row (issue 39).

Each row is priced as it ran (the file's first line: 4096 tokens per rank, hidden 7168, top-8
of 8 x ranks experts, uniform routing) and converted to the figure the table prints, with the
branch's own byte accounting (the same as DeepEP's, costmodels/llm/deepep_table.py): in one
NVLink domain (B200's node, GB200's NVL72 rack) "GB/s" = tokens x G x hidden x bytes / time, G
the GPUs a token reaches including the sender (moe_routing.gpus_reached); across nodes (H100)
tokens x D x hidden x bytes / time, D the target nodes including the sender's own
(moe_routing.domains_reached).

The B200 rows fix the two HybridEP constants (``fixed_by``); the GB200 and H100 rows fix
nothing. The H100 table names no NIC: its nodes are priced with one 400 Gbit/s NIC per GPU over
InfiniBand, as DGX H100 has.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.group_span import GroupSpan
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.moe_dispatch import BF16, element_bytes, hierarchical_seconds
from costmodels.llm.moe_routing import busiest_rank_factor, domains_reached, gpus_reached
from costmodels.llm.shapes import LLMCluster

DATA = Path(__file__).resolve().parents[1] / "data" / "hybridep-nvidia.csv"
TOKENS, HIDDEN, TOP_K, LOCAL_EXPERTS = 4096, 7168, 8, 8
_GPU = {"H100": ("H100 SXM", 8), "B200": ("B200", 8), "GB200": ("GB200", 72)}
NIC_Bps = 400e9 / 8


@dataclass(frozen=True)
class HybridEPRow:
    """One published figure (GB/s as the table counts it) and the model's."""

    platform: str
    ranks: int
    phase: str  # "dispatch" | "combine"
    dtype: str  # "fp8" | "bf16"
    metric: str  # "GB/s (NVLink)" | "GB/s (RDMA)"
    measured: float
    predicted: float
    fixed_by: str

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


def _cluster(platform: str) -> LLMCluster:
    name, per_node = _GPU[platform]
    gpu = get_gpu(name)
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, per_node, link.bandwidth_Bps, NIC_Bps,
                      intra_latency_s=link.latency_s)  # fmt: skip


def _row(r: dict[str, str]) -> HybridEPRow:
    platform, ranks = r["platform"], int(r["ranks"])
    cluster = _cluster(platform)
    domain = min(ranks, cluster.gpus_per_node)
    span = GroupSpan(ranks, max(1, ranks // domain), domain)
    experts = LOCAL_EXPERTS * ranks
    per_element = element_bytes(1.0) if r["dtype"] == "fp8" else BF16
    load = busiest_rank_factor(TOKENS * TOP_K * ranks, ranks)
    seconds = hierarchical_seconds(TOKENS, HIDDEN, TOP_K, experts, 0, span, cluster,
                                   per_element, load, "hybridep")  # fmt: skip
    if span.nodes > 1:
        copies, metric = domains_reached(experts, ranks, domain, TOP_K), "GB/s (RDMA)"
    else:
        copies, metric = gpus_reached(experts, ranks, domain, TOP_K), "GB/s (NVLink)"
    predicted = TOKENS * copies * HIDDEN * per_element / seconds / 1e9
    fixed = ""
    if platform == "B200":
        fixed = "HYBRIDEP_FP8_BYTES" if r["dtype"] == "fp8" else "HYBRIDEP_NVLINK_EFFICIENCY"
    return HybridEPRow(platform, ranks, r["phase"], r["dtype"], metric,
                       float(r["bandwidth_GBps"]), predicted, fixed)  # fmt: skip


def hybridep_rows(path: Path = DATA) -> list[HybridEPRow]:
    """Every row of the shipped table with the model's figure beside it."""
    with path.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return [_row(r) for r in rows]
