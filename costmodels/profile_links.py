"""A calibrated cluster profile as the links the predictions price: one rule for every surface.

A :class:`~costmodels.profile.ClusterProfile` holds one fitted :class:`~costmodels.profile.LinkFit`
per level ("intra": inside a node, "inter": one GPU's share of the network). The calculator's
link menus ("Calibrated: <name>"), ``commatlas predict --profile`` / ``compare --profile`` and
``commatlas check-ddp`` all read the profile through :func:`level_fit`, so a level the profile
lacks is filled the same way everywhere: with the fit of the level it has (a one-node calibration
prices the network like its own links, and says so).

Example::

    >>> from costmodels.profile import ClusterProfile, LinkFit
    >>> lab = ClusterProfile(name="lab", source="hand",
    ...                      levels={"intra": LinkFit(alpha_s=2e-6, bandwidth_Bps=1e11)})
    >>> fit, used = level_fit(lab, "inter")
    >>> used, fit.bandwidth_Bps
    ('intra', 100000000000.0)
    >>> cluster_from_profile(lab, nodes=2, gpus_per_node=4).inter_latency_s
    2e-06
"""

from __future__ import annotations

from costmodels.predict import Cluster
from costmodels.profile import ClusterProfile, Level, LinkFit


def level_fit(profile: ClusterProfile, level: Level) -> tuple[LinkFit, Level]:
    """The fit that prices ``level`` and the level it was fitted on (the other when missing).

    Raises ValueError naming the profile when it holds no level at all.
    """
    if level not in ("intra", "inter"):
        raise ValueError(f"level must be 'intra' or 'inter', got {level!r}")
    levels = dict(profile.levels)
    if not levels:
        raise ValueError(f"the calibrated profile {profile.name!r} has no fitted level")
    used = level if level in levels else next(iter(levels))
    return levels[used], used


def cluster_from_profile(profile: ClusterProfile, nodes: int, gpus_per_node: int) -> Cluster:
    """A :class:`~costmodels.predict.Cluster` whose two links are the profile's levels."""
    intra, _ = level_fit(profile, "intra")
    inter, _ = level_fit(profile, "inter")
    return Cluster(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        intra_bandwidth_Bps=intra.bandwidth_Bps,
        intra_latency_s=intra.alpha_s,
        inter_bandwidth_Bps=inter.bandwidth_Bps,
        inter_latency_s=inter.alpha_s,
    )
