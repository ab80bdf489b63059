"""NCCL's selection rule and the time of one collective over message sizes.

Every available (algorithm, protocol) pair is priced as

    t(n) = latency(n) + n x seconds_per_byte / tree_correction(n)

(latency.py, bandwidth.py) twice. First on NCCL's own view of the system
(``NcclSystem.nccl_view``: port speeds, the plugin's reported latency, no per-call costs), and,
like NCCL's tuner (src/enqueue.cc updateCollCostTable and topoGetAlgoInfo: the pair with the
lowest estimate, the first in NCCL's algorithm and protocol order on a tie; fp8 rings on more
than 8 ranks x 1024 so that they lose), that view picks the pair per size unless the caller
forces an algorithm or a protocol. Then the chosen pair is priced on the realised system
(achieved rates, the network's share at this node count, launch and protocol start-up): that is
the time. With several GPUs per process the host's enqueue overlaps the device's fixed
latency (``host_enqueue_s``: the longer of the two counts, latency.py).
Bandwidths follow nccl-tests (doc/PERFORMANCE.md): algbw = n / t and busbw = algbw x factor
(2(p-1)/p all-reduce; (p-1)/p all-gather, reduce-scatter, all-to-all; 1 the others).

Example::

    >>> from costmodels.nccl.builders import system_from_cluster
    >>> one = system_from_cluster(gpu="a100-80gb", gpus_per_node=8, nodes=1)
    >>> est = collective_time("all-reduce", [1e3, 1e9], one)
    >>> [str(a) for a in est.algorithm], [str(p) for p in est.protocol]
    (['ring', 'ring'], ['ll', 'simple'])
    >>> round(float(est.busbw_Bps[-1]) / 1e9)
    233
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from costmodels.limits import MAX_BYTES
from costmodels.nccl import constants as K
from costmodels.nccl.availability import candidates, canonical_operation
from costmodels.nccl.bandwidth import BandwidthTerm, bandwidth_term, channels
from costmodels.nccl.latency import LatencyTerm, latency_term
from costmodels.nccl.rccl import is_rccl, rccl_terms
from costmodels.nccl.system import NcclSystem


@dataclass(frozen=True)
class Candidate:
    """One priced (algorithm, protocol) pair."""

    algorithm: str
    protocol: str
    latency: LatencyTerm
    bandwidth: BandwidthTerm
    seconds_per_byte: float

    def seconds(self, nbytes: np.ndarray) -> np.ndarray:
        """Seconds for each size (numpy array of bytes > 0)."""
        lat, band = self.latency, self.bandwidth
        factor = np.where(nbytes >= lat.plateau_bytes, lat.plateau_factor, 1.0)
        correction = tree_correction(band.tree_correction, nbytes, band.correction_end)
        fill = band.fill_depth * np.minimum(nbytes, band.fill_cap_bytes) * self.seconds_per_byte
        ramp = (np.minimum(1.0, nbytes / lat.startup_ramp_bytes) if lat.startup_ramp_bytes
                else 1.0)  # fmt: skip
        fixed = np.maximum(lat.host_s, lat.overhead_s + factor * lat.nccl_s) + ramp * lat.startup_s
        return fixed + nbytes * self.seconds_per_byte / correction + fill


def tree_correction(
    row: tuple[float, ...] | None, nbytes: np.ndarray, end: int = K.TREE_CORRECTION_MAX_INDEX
) -> np.ndarray:
    """NCCL's tree correction for these sizes: row[floor(log2(n / 64))] where 0 <= i < end."""
    if row is None:
        return np.ones_like(nbytes)
    index = np.floor(np.log2(np.maximum(nbytes, 1.0) / 64.0)).astype(int)
    inside = (nbytes >= 64) & (index >= 0) & (index < end)
    return np.where(inside, np.asarray(row)[np.clip(index, 0, len(row) - 1)], 1.0)


@lru_cache(maxsize=512)
def plan(op: str, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto"):
    """The priced candidates of ``op`` on ``system`` (cached: a system is immutable)."""
    op = canonical_operation(op)
    if system.p == 1:
        return ()
    if is_rccl(system):  # AMD xGMI: RCCL's tuner (costmodels.nccl.rccl)
        return tuple(Candidate(a, p, lat, band, band.seconds_per_byte(system))
                     for a, p, lat, band in rccl_terms(op, system, algorithm, protocol))
    chans = channels(system)
    out = []
    for name, proto in candidates(op, system, algorithm, protocol):
        band = bandwidth_term(op, name, proto, system)
        lat = latency_term(op, name, proto, system, chans)
        out.append(Candidate(name, proto, lat, band, band.seconds_per_byte(system)))
    return tuple(out)


def bus_factor(op: str, p: int) -> float:
    """nccl-tests' busbw / algbw (doc/PERFORMANCE.md; sendrecv_perf uses 1)."""
    if op == "all-reduce":
        return 2 * (p - 1) / p
    if op in ("all-gather", "reduce-scatter", "all-to-all"):
        return (p - 1) / p
    return 1.0


@dataclass(frozen=True)
class CollectiveEstimate:
    """Time and bandwidths per message size, with the (algorithm, protocol) chosen for each."""

    op: str
    p: int
    size_bytes: np.ndarray
    time_s: np.ndarray
    algorithm: np.ndarray  # str per size ("none" when nothing is communicated)
    protocol: np.ndarray
    algbw_Bps: np.ndarray
    busbw_Bps: np.ndarray

    def rows(self) -> list[dict[str, Any]]:
        """One dict per size in the units of ``commatlas collective --json``."""
        return [
            {"size_bytes": float(n), "time_s": float(t), "algbw_GBps": float(a) / 1e9,
             "busbw_GBps": float(b) / 1e9, "algorithm": str(alg), "protocol": str(proto)}
            for n, t, a, b, alg, proto in zip(self.size_bytes, self.time_s, self.algbw_Bps,
                                             self.busbw_Bps, self.algorithm, self.protocol,
                                             strict=True)
        ]  # fmt: skip


def _sizes(nbytes: Any) -> np.ndarray:
    try:
        sizes = np.atleast_1d(np.asarray(nbytes, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"nbytes: expected numbers of bytes, got {nbytes!r}") from None
    if sizes.ndim != 1:
        raise ValueError(f"nbytes: expected a number or a flat list, got shape {sizes.shape}")
    if np.any(~np.isfinite(sizes)) or np.any(sizes < 0) or np.any(sizes > MAX_BYTES):
        raise ValueError(f"nbytes: every size must be from 0 to {MAX_BYTES:.3g} bytes")
    return sizes


FP8_TYPES = ("fp8", "fp8-e4m3", "fp8-e5m2", "float8")
FP8_RING_RANKS = 8  # enqueue.cc: fp8 rings on more than 8 ranks are relegated (x 1024)
FP8_RING_PENALTY = 1024.0


def candidate_times(
    op: str, nbytes: Any, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto"
) -> dict[tuple[str, str], np.ndarray]:
    """Seconds of every available (algorithm, protocol) pair at each size on ``system`` as given
    (0 for 0 bytes); ``system.nccl_view()`` gives NCCL's own estimates."""
    sizes = _sizes(nbytes)
    positive = np.maximum(sizes, 1.0)
    return {
        (c.algorithm, c.protocol): np.where(sizes > 0, c.seconds(positive), 0.0)
        for c in plan(canonical_operation(op), system, algorithm, protocol)
    }


def choice_times(
    op: str, nbytes: Any, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto",
    dtype: str = "float",
) -> dict[tuple[str, str], np.ndarray]:  # fmt: skip
    """NCCL's own estimate of every pair (its cost table), fp8 penalty included."""
    table = candidate_times(op, nbytes, system.nccl_view(), algorithm, protocol)
    if _is_fp8(dtype) and system.p > FP8_RING_RANKS:
        table = {pair: t * FP8_RING_PENALTY if pair[0] == "ring" else t
                 for pair, t in table.items()}  # fmt: skip
    return table


def _is_fp8(dtype: str) -> bool:
    if not isinstance(dtype, str):
        raise ValueError(f"dtype must be a str, got {dtype!r}")
    return dtype.strip().lower() in FP8_TYPES


def collective_time(
    op: str, nbytes: Any, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto",
    dtype: str = "float",
) -> CollectiveEstimate:  # fmt: skip
    """NCCL's choice and time for ``op`` at each size in ``nbytes`` (a number or a list).

    ``algorithm`` / ``protocol`` "auto" choose like NCCL's tuner; a forced one that cannot run
    (NVLS on A100, PAT with 8 GPUs per node, LL128 over PCIe ...) raises ValueError saying why.
    ``dtype`` matters only for fp8 (NCCL relegates fp8 rings on more than 8 ranks).
    """
    op = canonical_operation(op)
    sizes = _sizes(nbytes)
    choice = choice_times(op, sizes, system, algorithm, protocol, dtype)
    if not choice:  # one rank: nothing to communicate
        none = np.full(sizes.shape, "none")
        zero = np.zeros_like(sizes)
        return CollectiveEstimate(op, system.p, sizes, zero, none, none, zero, zero.copy())
    table = candidate_times(op, sizes, system, algorithm, protocol)
    pairs = list(choice)
    best = np.argmin(np.vstack([choice[pair] for pair in pairs]), axis=0)  # first minimum
    times = np.vstack([table[pair] for pair in pairs])
    seconds = times[best, np.arange(sizes.size)]
    algorithms = np.array([pairs[i][0] for i in best])
    protocols = np.array([pairs[i][1] for i in best])
    moving = sizes > 0
    algbw = np.divide(sizes, seconds, out=np.zeros_like(sizes), where=moving & (seconds > 0))
    return CollectiveEstimate(
        op, system.p, sizes, seconds, np.where(moving, algorithms, "none"),
        np.where(moving, protocols, "none"), algbw, algbw * bus_factor(op, system.p),
    )  # fmt: skip
