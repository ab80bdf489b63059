"""Fitting a cluster profile: alpha and B of a collective, and a whole profile, from measurements.

``fit_alpha_beta`` fits one collective (and level); ``parse_nccl_tests`` reads nccl-tests output
as measurements; ``profile_from_measurements`` fits every collective and picks each level's link.

The model and the two-step Huber fit are described in costmodels.calibration.profile; the
numerics are costmodels/calibration/robust_fit.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from costmodels.calibration.nccl_tests import measurement_fields
from costmodels.calibration.profile_schema import (
    ClusterProfile,
    Level,
    LinkFit,
    Measurement,
    canonical_collective,
    coefficients,
)
from costmodels.calibration.robust_fit import check_identified, huber_irls
from costmodels.limits import MAX_MEASUREMENTS


def fit_alpha_beta(
    measurements: Iterable[Measurement], collective: str, level: Level | None = None,
    ceiling_Bps: float | None = None,
) -> LinkFit:  # fmt: skip
    """Fit alpha and B to the measurements of ``collective`` (and ``level``, when given).

    Zero-byte rows are left out (NCCL returns before communicating, so they time a kernel
    launch, not a step). Raises ValueError with fewer than two distinct sizes or when the times
    do not grow with the size (no positive bandwidth fits). ``ceiling_Bps`` (the link's nominal
    rate, when known): a fitted B above it is not physical, so B is set to it, alpha refitted,
    and ``derived_from`` says so.
    """
    name = canonical_collective(collective)
    chosen = [
        m for m in measurements
        if m.collective == name and m.bytes > 0 and (level is None or m.level == level)
    ]  # fmt: skip
    if len({m.bytes for m in chosen}) < 2:
        raise ValueError(
            f"cannot fit latency and bandwidth: need measurements of {name}"
            f"{f' ({level})' if level else ''} at two or more non-zero sizes, got {len(chosen)}"
        )
    p = np.array([m.world_size for m in chosen], dtype=float)
    n = np.array([m.bytes for m in chosen])
    seconds = np.array([m.seconds for m in chosen])
    steps, volume = coefficients(name, p, n)
    if not np.any(volume > 0):
        raise ValueError(f"cannot fit latency and bandwidth: {name} on one rank sends nothing")
    check_identified(name, volume, seconds)
    # 1. beta jointly with alpha, residuals in seconds: the large sizes decide it.
    alpha, beta = huber_irls(np.column_stack([steps, volume]), seconds)
    if alpha < 0:  # a negative latency is no latency: refit beta alone
        (beta,) = huber_irls(volume[:, None], seconds)
    if not beta > 0:
        raise ValueError(
            f"the {name} times do not grow with the message size (the fitted bandwidth is "
            "not positive); no bandwidth can be fitted"
        )
    bounded = None
    if ceiling_Bps is not None and 1.0 / beta > ceiling_Bps:
        bounded = (f"bounded: the fit gave {1e-9 / beta:.4g} GB/s, above the nominal "
                   f"{ceiling_Bps / 1e9:.4g} GB/s")  # fmt: skip
        beta = 1.0 / ceiling_Bps
    # 2. alpha with beta fixed, residuals relative to each time: the small sizes decide it.
    alpha = 0.0
    if np.any(steps > 0):
        (alpha,) = huber_irls((steps / seconds)[:, None], 1.0 - volume * beta / seconds)
        alpha = max(float(alpha), 0.0)
    relative = np.abs((steps * alpha + volume * beta - seconds) / seconds)
    sizes = {m.world_size for m in chosen}
    per_node = {m.ranks_per_node for m in chosen}
    return LinkFit(
        alpha_s=float(alpha),
        bandwidth_Bps=float(1.0 / beta),
        points=len(chosen),
        collective=name,
        world_size=sizes.pop() if len(sizes) == 1 else None,
        ranks_per_node=per_node.pop() if len(per_node) == 1 else None,
        median_abs_rel_error=float(np.median(relative)),
        max_abs_rel_error=float(np.max(relative)),
        derived_from=bounded,
    )


def parse_nccl_tests(
    text: str, collective: str | None = None, level: Level | None = None
) -> list[Measurement]:
    """Measurements from nccl-tests output (format and overrides:
    costmodels/calibration/nccl_tests.py)."""
    wanted = canonical_collective(collective) if collective else None
    return [Measurement(**fields) for fields in measurement_fields(text, wanted, level)]


def per_gpu(fit: LinkFit) -> LinkFit:
    """An inter-node fit as one GPU's share of the network: B / ranks per node.

    A multi-node fit's B is the bus bandwidth of the whole job (costmodels.calibration.profile's
    docstring): every GPU of a node drives its share of the node's NICs, so one GPU's link, the
    unit of the link presets and of the other pages, carries B / g (g ranks per node). Alpha
    stays per step.
    """
    g = fit.ranks_per_node
    if not g or g == 1 or (fit.derived_from or "").endswith("ranks per node"):
        return fit  # one rank per node, unknown, or already one GPU's share
    bus = fit.bandwidth_Bps / 1e9
    note = f"{fit.collective} fit: bus bandwidth {bus:.4g} GB/s / {g} ranks per node"
    if fit.derived_from:  # e.g. bounded by the nominal rate
        note = f"{fit.derived_from}; {note}"
    return fit.model_copy(update={"bandwidth_Bps": fit.bandwidth_Bps / g, "derived_from": note})


def profile_from_measurements(
    measurements: Sequence[Measurement], name: str, source: str,
    ceilings: dict[str, float] | None = None,
) -> ClusterProfile:  # fmt: skip
    """Fit every (collective, level) present; each level takes its all-reduce fit when there is
    one (what the calculator prices most), else the fit with the most points; the inter level
    as one GPU's share (:func:`per_gpu`). ``ceilings``: nominal bus bandwidth per level, when
    known (fit_alpha_beta's ``ceiling_Bps``)."""
    if len(measurements) > MAX_MEASUREMENTS:
        raise ValueError(
            f"{len(measurements):,} measurements; a profile holds at most {MAX_MEASUREMENTS:,} "
            "(an nccl-tests sweep is ~30 sizes: give the sweeps of one job, not many runs' logs)"
        )
    fits: dict[str, dict[str, LinkFit]] = {}
    for collective, level in sorted({(m.collective, m.level or "unknown") for m in measurements}):
        wanted = None if level == "unknown" else level
        subset = [m for m in measurements if (m.level or "unknown") == level]
        ceiling = (ceilings or {}).get(level)
        fits.setdefault(collective, {})[level] = fit_alpha_beta(subset, collective, wanted,
                                                                ceiling)  # fmt: skip
    levels: dict[str, LinkFit] = {}
    for level in ("intra", "inter"):
        candidates = {c: f[level] for c, f in fits.items() if level in f}
        if candidates:
            best = candidates.get("all-reduce") or max(candidates.values(), key=lambda f: f.points)
            levels[level] = best if level == "intra" else per_gpu(best)
    return ClusterProfile(
        name=name, source=source, levels=levels, collectives=fits, measurements=list(measurements)
    )
