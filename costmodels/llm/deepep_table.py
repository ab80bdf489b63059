"""DeepEP's published kernel measurements (costmodels/data/deepep-v1-h800.csv) against the
dispatcher model of costmodels/llm/moe_dispatch.py, row by row (issue 39 item 5).

Each row is priced as it ran (the file's first line: H800 nodes of 8 GPUs, NVLink as NCCL's
topology counts it, one ConnectX-7 400 Gbit/s NIC per GPU over InfiniBand) and converted to the
figure DeepEP prints, with DeepEP's own byte accounting (tests/legacy/*.py of the same commit):

- normal kernels across nodes: "RDMA" GB/s = tokens x D x hidden x bytes / time, D the target
  nodes including the sender's own (moe_routing.domains_reached);
- normal kernels in one node: "NVLink" GB/s = tokens x G x hidden x bytes / time, G the GPUs a
  token reaches including the sender (moe_routing.gpus_reached);
- low-latency kernels: the latency itself (their GB/s is bytes / latency).

Two rows groups fix the model's two DeepEP constants (DEEPEP_NVLINK_EFFICIENCY from the
one-node normal rows, DEEPEP_LL_FIXED_S from the low-latency rows' median): ``fixed_by`` says
which, so the benchmark can print in-sample and other rows apart.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.group_span import GroupSpan
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.moe_dispatch import (
    BF16,
    element_bytes,
    hierarchical_seconds,
    low_latency_seconds,
)
from costmodels.llm.moe_routing import busiest_rank_factor, domains_reached, gpus_reached
from costmodels.llm.shapes import LLMCluster

DATA = Path(__file__).resolve().parents[1] / "data" / "deepep-v1-h800.csv"
GPUS_PER_NODE = 8
NIC_Bps = 400e9 / 8  # ConnectX-7, 400 Gbit/s per GPU


@dataclass(frozen=True)
class DeepEPRow:
    """One published figure and the model's figure for it (GB/s or microseconds)."""

    kernel: str  # "normal" | "low-latency"
    phase: str  # "dispatch" | "combine"
    ep: int
    metric: str  # "GB/s (RDMA)", "GB/s (NVLink)" or "latency us"
    measured: float
    predicted: float
    fixed_by: str  # which model constant this row helped fix ("" for none)

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


def h800_cluster() -> LLMCluster:
    """DeepEP's test nodes: 8 x H800 on NVSwitch, one 400 Gbit/s InfiniBand NIC per GPU."""
    gpu = get_gpu("H800")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, GPUS_PER_NODE, link.bandwidth_Bps, NIC_Bps,
                      intra_latency_s=link.latency_s)  # fmt: skip


def _span(ep: int) -> GroupSpan:
    nodes = max(1, ep // GPUS_PER_NODE)
    return GroupSpan(ep, nodes, min(ep, GPUS_PER_NODE))


def _normal(r: dict[str, str], cluster: LLMCluster) -> DeepEPRow:
    ep, tokens, hidden = int(r["ep"]), int(r["tokens"]), int(r["hidden"])
    k, experts, groups = int(r["top_k"]), int(r["experts"]), int(r["topk_groups"] or 0)
    per_element = element_bytes(1.0) if r["phase"] == "dispatch" else BF16
    span = _span(ep)
    load = busiest_rank_factor(tokens * k * ep, ep)
    seconds = hierarchical_seconds(tokens, hidden, k, experts, groups, span, cluster,
                                   per_element, load)  # fmt: skip
    if span.nodes > 1:
        copies, metric = domains_reached(experts, ep, GPUS_PER_NODE, k, groups), "GB/s (RDMA)"
    else:
        copies, metric = gpus_reached(experts, ep, GPUS_PER_NODE, k, groups), "GB/s (NVLink)"
    predicted = tokens * copies * hidden * per_element / seconds / 1e9
    fixed = "DEEPEP_NVLINK_EFFICIENCY" if span.nodes == 1 else ""
    return DeepEPRow("normal", r["phase"], ep, metric, float(r["bandwidth_GBps"]), predicted,
                     fixed)  # fmt: skip


def _low_latency(r: dict[str, str], cluster: LLMCluster) -> DeepEPRow:
    ep, tokens, hidden, k = int(r["ep"]), int(r["tokens"]), int(r["hidden"]), int(r["top_k"])
    # DeepEP's bytes per copy: fp8 values + one fp32 scale per 128 + 16 bytes of metadata
    # (dispatch), bf16 values (combine)
    per_copy = hidden + hidden / 128 * 4 + 16 if r["phase"] == "dispatch" else hidden * BF16
    seconds = low_latency_seconds(tokens, hidden, k, _span(ep), cluster, per_copy)
    return DeepEPRow("low-latency", r["phase"], ep, "latency us", float(r["latency_us"]),
                     seconds * 1e6, "DEEPEP_LL_FIXED_S")  # fmt: skip


def deepep_rows(path: Path = DATA) -> list[DeepEPRow]:
    """Every row of the shipped table with the model's figure beside it."""
    cluster = h800_cluster()
    with path.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return [(_normal if r["kernel"] == "normal" else _low_latency)(r, cluster) for r in rows]
