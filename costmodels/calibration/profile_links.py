"""A calibrated cluster profile as the links the predictions price: one rule for every surface.

A :class:`~costmodels.calibration.profile.ClusterProfile` holds one fitted
:class:`~costmodels.calibration.profile.LinkFit`
per level ("intra": inside a node, "inter": one GPU's share of the network). The calculator's
link menus ("Calibrated: <name>"), ``commatlas predict --profile`` / ``compare --profile`` and
``commatlas check-ddp`` all read the profile through :func:`level_fit`, so a level the profile
lacks is treated the same way everywhere: a prediction that needs it (the network for more than
one node, the intra-node link for more than one GPU per node) is an error
(:class:`MissingLevelError`) unless the caller asks, explicitly, to price it with the level the
profile has (``fill=True``; ``--fill-missing-level`` on the command line). A one-node
calibration would otherwise price the network at NVLink speed without anyone noticing.

Example::

    >>> from costmodels.calibration.profile import ClusterProfile, LinkFit
    >>> lab = ClusterProfile(name="lab", source="hand",
    ...                      levels={"intra": LinkFit(alpha_s=2e-6, bandwidth_Bps=1e11)})
    >>> fit, used = level_fit(lab, "inter", fill=True)
    >>> used, fit.bandwidth_Bps
    ('intra', 100000000000.0)
    >>> cluster_from_profile(lab, nodes=1, gpus_per_node=4).intra_latency_s  # no network used
    2e-06
    >>> try:
    ...     cluster_from_profile(lab, nodes=2, gpus_per_node=4)
    ... except MissingLevelError as exc:
    ...     print(str(exc)[:57])
    the calibrated profile 'lab' has no inter level (it holds
"""

from __future__ import annotations

from costmodels.calibration.profile import ClusterProfile, Level, LinkFit
from costmodels.dp.predict import Cluster


class MissingLevelError(ValueError):
    """A prediction needs a level (intra or inter) the calibrated profile does not hold."""


_HOW = {"inter": "calibrate across two nodes for the network",
        "intra": "calibrate inside one node for its links"}  # fmt: skip


def level_fit(profile: ClusterProfile, level: Level, fill: bool = False) -> tuple[LinkFit, Level]:
    """The fit that prices ``level`` and the level it was fitted on.

    A missing level raises :class:`MissingLevelError` saying how to get it, unless ``fill``:
    then the other level's fit is returned (and named, so callers can say so). Raises
    ValueError naming the profile when it holds no level at all.
    """
    if level not in ("intra", "inter"):
        raise ValueError(f"level must be 'intra' or 'inter', got {level!r}")
    levels = dict(profile.levels)
    if not levels:
        raise ValueError(f"the calibrated profile {profile.name!r} has no fitted level")
    if level in levels:
        return levels[level], level
    other = next(iter(levels))
    if not fill:
        raise MissingLevelError(
            f"the calibrated profile {profile.name!r} has no {level} level (it holds "
            f"{' and '.join(levels)} only): {_HOW[level]}, or fill it with the {other} fit "
            "explicitly (--fill-missing-level)"
        )
    return levels[other], other


def cluster_from_profile(
    profile: ClusterProfile, nodes: int, gpus_per_node: int, fill: bool = False
) -> Cluster:
    """A :class:`~costmodels.dp.predict.Cluster` whose two links are the profile's levels.

    Only the levels the cluster uses must be in the profile (the network for two or more
    nodes, the intra-node link for two or more GPUs per node); a level it does not use takes
    the other's numbers, which then change nothing.
    """
    intra, _ = level_fit(profile, "intra", fill=fill or gpus_per_node == 1)
    inter, _ = level_fit(profile, "inter", fill=fill or nodes == 1)
    return Cluster(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        intra_bandwidth_Bps=intra.bandwidth_Bps,
        intra_latency_s=intra.alpha_s,
        inter_bandwidth_Bps=inter.bandwidth_Bps,
        inter_latency_s=inter.alpha_s,
    )
