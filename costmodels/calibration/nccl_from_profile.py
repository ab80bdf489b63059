"""An NCCL system calibrated by a cluster profile (``import-nccl-tests``, ``commatlas calibrate``).

A :class:`~costmodels.calibration.profile.ClusterProfile` keeps the measurements it was fitted on.
When it
has measured collectives, the NCCL system's free numbers (launch overhead, per-GPU intra-node
bandwidth, per-NIC bandwidth) are fitted to them (:func:`costmodels.nccl.fit.fit_system`) on
the measured layout (world size and ranks per node), then carried over to the layout asked for:
a one-node measurement calibrates the launch overhead and the NVLink bandwidth, a multi-node one
also the NICs. Without measurements the profile's fitted alpha-beta levels are used instead:
the intra level's bandwidth (a bus bandwidth, comparable with nccl-tests' busbw) as the per-GPU
intra-node bandwidth, the inter level (one GPU's share of the network) times the GPUs per node
as the node's network, and the fitted per-step alpha times the ring's 2(p-1) steps as the time
of the smallest all-reduce, from which the launch overhead follows.

Example::

    >>> from costmodels.calibration.profile import ClusterProfile, LinkFit
    >>> from costmodels.nccl.builders import system_from_cluster
    >>> lab = ClusterProfile(name="lab", source="hand",
    ...                      levels={"intra": LinkFit(alpha_s=3e-6, bandwidth_Bps=2e11)})
    >>> base = system_from_cluster(gpu="a100", gpus_per_node=8)
    >>> round(system_from_profile(lab, base).bus_Bps / 1e9)
    200
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from costmodels.nccl.availability import canonical_operation
from costmodels.nccl.fast import collective_seconds
from costmodels.nccl.fit import MIN_BYTES, fit_system
from costmodels.nccl.system import NcclSystem

if TYPE_CHECKING:
    from costmodels.calibration.profile import ClusterProfile, Measurement


def _groups(measurements: list[Measurement]) -> dict[tuple[int, int], list[Measurement]]:
    groups: dict[tuple[int, int], list[Measurement]] = defaultdict(list)
    for m in measurements:
        per_node = m.ranks_per_node or m.world_size  # unknown hosts: one node
        if m.bytes >= MIN_BYTES and m.world_size % per_node == 0:
            groups[(m.world_size, per_node)].append(m)
    return groups


def _pick(groups: dict, base: NcclSystem, op: str | None) -> list[Measurement] | None:
    if not groups:
        return None
    layout = (base.p, base.gpus_per_node)
    rows = groups.get(layout) or max(groups.values(), key=len)
    if op is not None:
        same = [m for m in rows if m.collective == op]
        rows = same if len({m.bytes for m in same}) >= 2 else rows
    return rows if len({m.bytes for m in rows}) >= 2 else None


def _from_measurements(base: NcclSystem, rows: list[Measurement]) -> NcclSystem:
    world, per_node = rows[0].world_size, rows[0].ranks_per_node or rows[0].world_size
    measured = base.with_changes(nodes=world // per_node, gpus_per_node=per_node)
    if measured.nodes > 1 and measured.nic_Bps_each is None:
        raise ValueError(
            "the profile measured several nodes; give the NIC link (inter) so that its "
            "bandwidth can be fitted"
        )
    data = []
    for collective in sorted({m.collective for m in rows}):
        chosen = [m for m in rows if m.collective == collective]
        data.append((collective, [m.bytes for m in chosen], [m.seconds for m in chosen]))
    fitted = fit_system(measured, data)
    changes: dict[str, object] = {
        "launch_s": fitted.launch_s, "intra_Bps_per_gpu": fitted.bus_Bps,
        "notes": (*base.notes, f"calibrated on {world} ranks ({per_node} per node): "
                  + fitted.notes[-1]),
    }  # fmt: skip
    if measured.nodes > 1 and base.nodes > 1:
        changes["nic_Bps_each"] = fitted.nic_Bps_each
    return base.with_changes(**changes)


def _from_levels(profile: ClusterProfile, base: NcclSystem) -> NcclSystem:
    levels = dict(profile.levels)
    if not levels:
        raise ValueError(f"the profile {profile.name!r} has no measurements and no fitted level")
    intra = levels.get("intra") or levels["inter"]
    changes: dict[str, object] = {"intra_Bps_per_gpu": intra.bandwidth_Bps}
    notes = [f"profile {profile.name!r}: intra-node {intra.bandwidth_Bps / 1e9:.4g} GB/s per GPU "
             f"(fitted bus bandwidth)"]  # fmt: skip
    if base.nodes > 1 and "inter" in levels:
        node = levels["inter"].bandwidth_Bps * base.gpus_per_node
        changes["nic_Bps_each"] = node / base.nics
        notes.append(f"network {node / 1e9:.4g} GB/s per node (fitted per-GPU share x GPUs)")
    trial = base.with_changes(**changes, launch_s=0.0)
    smallest = intra.alpha_s * 2 * (base.p - 1)  # the fitted ring's time at n -> 0
    launch = max(0.0, smallest - collective_seconds("all-reduce", trial, 1.0))
    notes.append(f"launch {launch * 1e6:.3g} us so that the smallest all-reduce takes the fitted "
                 f"2(p-1) alpha = {smallest * 1e6:.3g} us")  # fmt: skip
    return trial.with_changes(launch_s=min(launch, 0.5), notes=(*base.notes, *notes))


def system_from_profile(
    profile: ClusterProfile, base: NcclSystem, op: str | None = None
) -> NcclSystem:
    """``base`` (presets for the layout asked for) with the profile's fitted numbers.

    ``op`` prefers the measurements of that collective when the profile has them.
    """
    wanted = canonical_operation(op) if op else None
    groups = _groups(list(profile.measurements))
    # Layouts this fabric cannot hold (e.g. hosts unknown and more ranks than one node has)
    # cannot be fitted on it; the fitted levels are used then.
    fits = {key: rows for key, rows in groups.items() if key[1] <= base.fabric.max_gpus}
    rows = _pick(fits, base, wanted)
    if rows is not None:
        return _from_measurements(base, rows)
    return _from_levels(profile, base)


def measured_busbw(profile: ClusterProfile, op: str, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, busbw bytes/s) the profile measured for ``op`` on ``p`` ranks, sorted by size."""
    from costmodels.nccl.tuner import bus_factor

    op = canonical_operation(op)
    rows = sorted((m.bytes, m.seconds) for m in profile.measurements
                  if m.collective == op and m.world_size == p and m.bytes > 0)  # fmt: skip
    sizes = np.array([r[0] for r in rows], dtype=float)
    seconds = np.array([r[1] for r in rows], dtype=float)
    return sizes, sizes / seconds * bus_factor(op, p) if rows else sizes
