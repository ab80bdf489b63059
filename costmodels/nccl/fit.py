"""Fit an NCCL system's free numbers to measured collectives (after ``import-nccl-tests``).

Three numbers of :class:`~costmodels.nccl.system.NcclSystem` are not NCCL's: the per-call
launch overhead, the GPU's intra-node bandwidth and the NICs' achieved bandwidth (presets are
nominal rates x estimated fractions). Given measurements of one cluster (a profile's
``measurements``: nccl-tests rows or ``commatlas calibrate`` timings), they are chosen to
minimise the mean relative error of the bus bandwidth,

    mean over rows of | t_measured(n) / t_model(n) - 1 |  (= | busbw_model / busbw_measured - 1 |),

which weighs every size alike. The
algorithm choice (NCCL's tuner rule) is re-made for every trial, so the objective is piecewise
smooth; it is minimised on a coarse grid over the box (launch overhead 0-200 us, each bandwidth
1/3 to 3 x its starting value, log-spaced) and then by coordinate search on a shrinking grid
around the best point (no gradient needed; launch kept in [0, 500 us]). Rows
below ``min_bytes`` (default 1 MiB) are left out: there the time is launch and hop latency,
which the model describes only together (NCCL's hop table is for ranking, not timing), and
the many small rows of a sweep would outvote the bandwidth.

Example::

    >>> from costmodels.nccl.builders import system_from_cluster
    >>> from costmodels.nccl.tuner import collective_time
    >>> truth = system_from_cluster(gpu="a100", gpus_per_node=8, launch_s=50e-6,
    ...                             intra_bandwidth_Bps=200e9)
    >>> sizes = [2.0**k for k in range(16, 31)]
    >>> seconds = collective_time("all-reduce", sizes, truth).time_s
    >>> fitted = fit_system(system_from_cluster(gpu="a100", gpus_per_node=8),
    ...                     [("all-reduce", sizes, seconds)])
    >>> round(fitted.bus_Bps / 1e9), round(fitted.launch_s * 1e6)
    (200, 50)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from costmodels.nccl.system import NcclSystem
from costmodels.nccl.tuner import collective_time

MIN_BYTES = 2.0**20
SWEEPS = 5
POINTS = 13
GRID_STARTS = 3  # best grid points refined besides the starting values


def _objective(system: NcclSystem, data: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> float:
    total, count = 0.0, 0
    for op, sizes, seconds in data:
        predicted = collective_time(op, sizes, system).time_s
        total += float(np.sum(np.abs(seconds / predicted - 1.0)))
        count += sizes.size
    return total / count


def _apply(system: NcclSystem, values: dict[str, float]) -> NcclSystem:
    return system.with_changes(
        launch_s=values["launch"], intra_Bps_per_gpu=values["intra"],
        nic_Bps_each=values.get("nic", system.nic_Bps_each),
    )  # fmt: skip


def _grid(system: NcclSystem, rows: list, values: dict[str, float]):
    scales = np.exp(np.linspace(np.log(1 / 3), np.log(3), 7))
    nics = values["nic"] * scales if "nic" in values else [None]
    for launch in np.linspace(0.0, 200e-6, 9):
        for intra in values["intra"] * scales:
            for nic in nics:
                trial = {**values, "launch": float(launch), "intra": float(intra)}
                if nic is not None:
                    trial["nic"] = float(nic)
                yield _objective(_apply(system, trial), rows), trial


def _refine(system: NcclSystem, rows: list, values: dict[str, float]):
    best = _objective(_apply(system, values), rows)
    spans = {"launch": 50e-6, "intra": np.log(2.0), "nic": np.log(2.0)}
    for _ in range(SWEEPS):
        for name in list(values):
            grid = np.linspace(-1, 1, POINTS) * spans[name]
            if name == "launch":
                trials = np.clip(values[name] + grid, 0.0, 500e-6)
            else:
                trials = values[name] * np.exp(grid)
            for value in trials:
                trial = {**values, name: float(value)}
                cost = _objective(_apply(system, trial), rows)
                if cost < best - 1e-12:
                    best, values = cost, trial
            spans[name] /= 3.0
    return best, values


def fit_system(
    system: NcclSystem,
    data: Iterable[tuple[str, Sequence[float], Sequence[float]]],
    min_bytes: float = MIN_BYTES,
) -> NcclSystem:
    """``system`` with launch overhead and bandwidths fitted to (operation, sizes, seconds)
    triples.

    Raises ValueError when fewer than two sizes of at least ``min_bytes`` remain.
    """
    rows = []
    for op, sizes, seconds in data:
        n = np.asarray(sizes, dtype=float)
        t = np.asarray(seconds, dtype=float)
        if n.shape != t.shape:
            raise ValueError(f"fit_system: {op}: {n.size} sizes but {t.size} times")
        keep = (n >= min_bytes) & (t > 0) & np.isfinite(t)
        if np.any(keep):
            rows.append((op, n[keep], t[keep]))
    if sum(len(set(n)) for _, n, _ in rows) < 2:
        raise ValueError(
            f"fit_system: need measurements at two or more sizes of at least {min_bytes:g} bytes"
        )
    values = {"launch": system.launch_s, "intra": system.bus_Bps}
    if system.nodes > 1:
        values["nic"] = system.nic_Bps_each
    # 1. a coarse grid over the whole box finds the basins; 2. coordinate search refines the
    # starting point and the best grid points, and the best result wins.
    starts = [(_objective(_apply(system, values), rows), values)]
    starts += sorted(_grid(system, rows, values), key=lambda item: item[0])[:GRID_STARTS]
    best, values = min((_refine(system, rows, start) for _, start in starts),
                       key=lambda item: item[0])  # fmt: skip
    launch, intra, nic = values["launch"], values["intra"], values.get("nic")
    fitted = _apply(system, values)
    note = (f"fitted to {sum(n.size for _, n, _ in rows)} measured sizes >= {min_bytes:g} B "
            f"(mean relative busbw error {best:.3f}): launch {launch * 1e6:.3g} us, intra "
            f"{intra / 1e9:.4g} GB/s per GPU"
            + (f", NIC {nic / 1e9:.4g} GB/s each" if nic else ""))  # fmt: skip
    return fitted.with_changes(notes=(*system.notes, note))
