"""The symbol values of one priced candidate, to evaluate the sympy models of formulas.py.

``symbol_values(op, algorithm, protocol, system, nbytes)`` returns the keyword arguments of
``costmodels.get(id).evaluate(variant, ...)`` (``VARIANT_OF`` names the model and variant) for
which the sympy formula gives the same seconds as the numeric path: the protocol's hop
latencies, eta with NCCL's caps, size correction, the tree's pipeline fill and the all-gather's
local copy, and alpha_0 =
every fixed part (launch, host overlap, start-up, NCCL's fixed latency; the plateau factor
where it applies).
"""

from __future__ import annotations

import numpy as np

from costmodels.nccl.availability import canonical_operation
from costmodels.nccl.system import NcclSystem
from costmodels.nccl.tuner import plan, tree_correction


def variant_of(op: str, algorithm: str) -> tuple[str, str]:
    """(cost-model id, variant) of an (operation, algorithm) pair."""
    op = canonical_operation(op)
    if algorithm in ("nvls", "nvls-tree"):
        return "nvls", f"{op} {algorithm}"
    if algorithm == "pat":
        return "pat", op
    return "nccl", f"{op} {algorithm}"


def symbol_values(
    op: str, algorithm: str, protocol: str, system: NcclSystem, nbytes: float
) -> dict[str, float]:
    """Values of p, g, n, alpha_0, alpha_intra, alpha, beta_intra, beta, K, eta."""
    op = canonical_operation(op)
    (candidate,) = plan(op, system, algorithm, protocol)
    lat, band = candidate.latency, candidate.bandwidth
    plateau = lat.plateau_factor if nbytes >= lat.plateau_bytes else 1.0
    correction = float(
        tree_correction(band.tree_correction, np.array([float(nbytes)]), band.correction_end)[0]
    )
    # the tree's pipeline fill (bandwidth.tree_fill) is size-dependent like the correction:
    # fold both into eta, n / (n / correction + depth x min(n, cap)) of the link's rate
    fill = band.fill_depth * min(float(nbytes), band.fill_cap_bytes)
    effective = float(nbytes) / (float(nbytes) / correction + fill) if nbytes > 0 else correction
    # a ring's local copies (costmodels.nccl.ring_local) slow the rate too:
    # link / eta + copy = link / (eta x link / (link + eta x copy))
    link = band.link_seconds_per_byte(system)
    copied = link / (link + band.eta * band.copy_s_per_byte) if band.copy_s_per_byte else 1.0
    alpha = plateau * lat.inter_hop_s
    if op in ("broadcast", "reduce") and algorithm == "ring" and system.nodes > 1:
        alpha = lat.inter_steps * lat.inter_hop_s / system.p  # the formula counts p hops
    return {
        "p": system.p,
        "g": system.gpus_per_node,
        "n": float(nbytes),
        # alpha_0 holds every fixed part, including the host/device overlap (latency.py)
        "alpha_0": lat.seconds(float(nbytes))
        - plateau * (lat.intra_steps * lat.intra_hop_s + lat.inter_steps * lat.inter_hop_s),
        "alpha_intra": plateau * lat.intra_hop_s,
        "alpha": alpha,
        "beta_intra": 1.0 / system.bus_Bps,
        "beta": 1.0 / system.nic_Bps_each if system.nic_Bps_each else 1.0,
        "K": system.nics,
        "eta": band.eta * effective * copied,
    }
