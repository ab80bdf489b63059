"""What a trace's collectives say about the network: bus bandwidth by size, measurements a
cluster profile can be fitted to, and the intra-node efficiency against the NCCL model.

Each (operation, size, group) is represented by its *fastest* call: the one least inflated by
waiting for other ranks (a kernel's time is wait + transfer; with several ranks' traces the wait
is removed first, costmodels.calibration.trace.collectives.align_ranks). A group is intra-node
when it is no larger than the GPUs of one node (``gpus_per_node``: the trace's
``deviceProperties`` count unless given).

``intra_efficiency``: for intra-node collectives of at least ``MIN_BYTES`` on a GPU with a
preset, the NCCL model's time on that GPU's own fabric (costmodels.nccl, one node of the
group's size) over the measured time, median over sizes. It is capped at the fabric's nominal
rate (the GPU's NVLink per direction over NCCL's topology figure): a faster measurement is not
physical, and the cap is said. The network between nodes is not identified from a trace alone
(the NIC is not in it): its measurements go into ``measurements`` for
``commatlas collective --calibration`` / ``predict --calibration``, which fit it on the link the
user names.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from costmodels.calibration.trace.collectives import Collective
from costmodels.hardware import GPU

MIN_BYTES = 1 << 20


@dataclass
class NetworkCalibration:
    """Bus bandwidths by size, fit-ready measurements and the intra-node efficiency."""

    bus_bandwidth: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    intra_efficiency: float | None = None
    reasons: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _fastest(calls: list[Collective]) -> dict[tuple, Collective]:
    best: dict[tuple, Collective] = {}
    for c in calls:
        if c.bytes is None or not c.bytes > 0 or not c.group_size or c.transfer_s <= 0:
            continue
        key = (c.op, c.bytes, c.group_size)
        if key not in best or c.transfer_s < best[key].transfer_s:
            best[key] = c
    return best


def _model_seconds(op: str, size: float, group: int, preset: str) -> float | None:
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.nccl.fast import collective_seconds

    try:
        system = system_from_cluster(gpu=preset, gpus_per_node=group, nodes=1)
        return collective_seconds(op, system, size)
    except ValueError:  # an operation or fabric the model does not cover
        return None


def network_calibration(
    collectives: list[Collective], gpus_per_node: int, gpu: GPU | None, preset: str | None
) -> NetworkCalibration:
    """The module docstring's figures for the collectives of one or more aligned ranks."""
    out = NetworkCalibration()
    fastest = _fastest(collectives)
    counts: dict[tuple, int] = defaultdict(int)
    for c in collectives:
        counts[(c.op, c.bytes, c.group_size)] += 1
    ratios = []
    for (op, size, group), c in sorted(fastest.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        level = "intra" if group <= gpus_per_node else "inter"
        out.bus_bandwidth.append(
            {
                "op": op,
                "bytes": size,
                "group_size": group,
                "level": level,
                "calls": counts[(op, size, group)],
                "seconds": c.transfer_s,
                "busbw_GBps": c.busbw_Bps / 1e9,
                "bytes_source": c.bytes_source,
            }
        )
        if group > 1:
            out.measurements.append(
                {
                    "collective": op,
                    "level": level,
                    "world_size": group,
                    "ranks_per_node": min(group, gpus_per_node),
                    "bytes": size,
                    "seconds": c.transfer_s,
                    "busbw_Bps": c.busbw_Bps,
                }
            )
        if level == "intra" and group > 1 and size >= MIN_BYTES and preset:
            model = _model_seconds(op, size, group, preset)
            if model:
                ratios.append(model / c.transfer_s)
    if ratios:
        from costmodels.nccl.fabrics import fabric_for_gpu

        ceiling = 1.0
        if gpu is not None and gpu.nvlink_Bps:
            ceiling = max(1.0, gpu.nvlink_Bps / fabric_for_gpu(preset).bus_Bps_per_gpu)
        efficiency = statistics.median(ratios)
        if efficiency > ceiling:
            out.notes.append(
                f"intra-node efficiency {efficiency:.3g} capped at {ceiling:.3g} "
                "(the GPU's nominal NVLink rate)"
            )
            efficiency = ceiling
        out.intra_efficiency = efficiency
    elif not preset:
        out.reasons["intra_efficiency"] = "the trace's GPU is unknown: no fabric to compare with"
    else:
        out.reasons["intra_efficiency"] = (
            f"no intra-node collective of >= {MIN_BYTES:,} bytes with known bytes"
        )
    if any(m["level"] == "inter" for m in out.measurements):
        out.reasons["inter"] = (
            "multi-node groups measured; the NIC is not in the trace: name "
            "it (--inter) where the calibration is used"
        )
    return out
