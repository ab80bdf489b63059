"""KV-cache transfer from a prefill instance to a decode instance (disaggregated serving).

DistServe (Zhong et al., OSDI '24), Splitwise (Patel et al., ISCA '24) and Mooncake (Qin et al.,
FAST '25) run prefill and decode on different GPUs; each request's cache must move between
them. Every GPU of the prefill instance holds a shard of the cache (its KV heads of its stage's
layers) and sends it over its own path to the decode GPU that needs it, all shards at once::

    t = alpha + (prompt tokens x bytes per token / shards) x beta

``shards = pp x min(tp, kv_heads)`` (a KV head replicated over TP is sent once). The path is
``link``: ``"nvlink"`` (prefill and decode GPUs in one node, the GPU's own fabric as NCCL counts
it, DistServe's placement for slow networks), a link preset of costmodels/hardware/links.py (one
NIC per GPU: "InfiniBand NDR", "RoCE 400", "100 GbE" for TCP), or a bandwidth per GPU. Presets
count their achievable fraction; a bare bandwidth is taken as achieved, with no latency added.

``mode="whole"`` sends the cache after the prefill (all of it is exposed); ``"layer-wise"``
sends each layer's cache while the next layers compute (the overlap the kv-cache-transfer
record describes): with L layers, prefill time P and X the time of the L pieces (each with its
own latency), the last piece lands max(X / L, X - (L - 1) P / L) after the prefill ends (the
pieces queue when X / L > P / L).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.hardware import GPU, get_link
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.kv_cache import kv_bytes_per_request
from costmodels.serving.layout import ServingLayout
from costmodels.units import parse_bandwidth

MODES = ("whole", "layer-wise")


@dataclass(frozen=True)
class TransferLink:
    bandwidth_Bps: float  # per GPU, one direction, achieved
    latency_s: float
    description: str


def transfer_link(link: str, gpu: GPU) -> TransferLink:
    """The path one prefill GPU sends its cache shard over (module docstring)."""
    if link.strip().lower() in ("nvlink", "intra", "intra-node"):
        intra = gpu_intra_link(gpu)
        return TransferLink(intra.bandwidth_Bps, intra.latency_s, intra.description)
    try:
        preset = get_link(link)
    except ValueError:
        bandwidth = parse_bandwidth(link, "--transfer-link (nvlink, a link preset or a bandwidth)")
        return TransferLink(bandwidth, 0.0, f"{link.strip()} per GPU as given, no latency added")
    achieved = preset.bandwidth_Bps * preset.achievable_fraction
    return TransferLink(achieved, preset.latency_s,
                        f"{preset.name}: {achieved / 1e9:.4g} GB/s achievable per GPU, "
                        f"{preset.latency_s * 1e6:g} us")  # fmt: skip


def senders(shape: TransformerShape, layout: ServingLayout) -> int:
    """GPUs holding distinct shards of a request's cache."""
    return layout.pp * min(layout.tp, shape.kv_head_count)


@dataclass(frozen=True)
class Transfer:
    bytes_total: float
    seconds: float  # whole transfer
    exposed_s: float  # what adds to the time to first token


def kv_transfer(shape: TransformerShape, layout: ServingLayout, prompt_len: int,
                link: TransferLink, prefill_s: float, mode: str = "whole") -> Transfer:  # fmt: skip
    if mode not in MODES:
        raise ValueError(f"--transfer-mode must be one of {list(MODES)}, got {mode!r}")
    total = kv_bytes_per_request(shape, prompt_len, layout.kv_bytes)  # windowed (issue 39)
    seconds = link.latency_s + total / senders(shape, layout) / link.bandwidth_Bps
    if mode == "whole":
        return Transfer(total, seconds, seconds)
    layers = shape.layers
    piece = link.latency_s + (seconds - link.latency_s) / layers
    pieces = layers * piece
    exposed = max(piece, pieces - (layers - 1) * prefill_s / layers)
    return Transfer(total, pieces, exposed)
