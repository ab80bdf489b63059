"""The link a measured row's ``network`` column names ("10GbE with TCP/IP", "100GbIB with RDMA").

Names are matched to the links of costmodels.hardware (read-only here) by kind and speed:

- Ethernet: ``NNGbE``, ``NN GbE``, ``NNGbps Ethernet``; speeds 10, 25, 100, 400. With "RDMA" or
  "RoCE" in the name, RoCE at 100, 200, 400 (RDMA over Converged Ethernet).
- InfiniBand: ``NNGb IB``, ``NNGbIB``, ``NN Gbit/s InfiniBand`` with 100 = EDR, 200 = HDR,
  400 = NDR (4x link data rates); or ``InfiniBand EDR|HDR|NDR`` by generation.
- RoCE: ``RoCE NN``, ``NNGb RoCE``.

"with RDMA", "TCP/IP", "IPoIB" and similar words describe the transport, not the link: the link
is chosen by the physical network, and costmodels.dp.tcp_regime reads the transport words (a
TCP/IP run pays the kernel stack's per-step latency whatever its fabric; the validation fits the
effective bandwidth from the same network's BSP rows).
"""

from __future__ import annotations

import re

from costmodels.hardware import Link, get_link

ACCEPTED = (
    "'NNGbE' or 'NN GbE' (NN = 10, 25, 100, 400), 'NNGb IB' or 'NN Gb InfiniBand' "
    "(NN = 100, 200, 400), 'InfiniBand EDR|HDR|NDR', 'RoCE NN' or 'NNGb RoCE' (NN = 100, 200, "
    "400), optionally followed by 'with RDMA' or 'TCP/IP'"
)
_IB_SPEEDS = {"100": "InfiniBand EDR", "200": "InfiniBand HDR", "400": "InfiniBand NDR"}


class NetworkNameError(ValueError):
    """A network name that names no link; the message lists the accepted forms."""


def network_kind(network: str) -> str:
    """'infiniband', 'roce' or 'ethernet' (NetworkNameError for a name that names no link)."""
    name = network_link(network).name
    if name.startswith("InfiniBand"):
        return "infiniband"
    return "roce" if name.startswith("RoCE") else "ethernet"


def network_link(network: str) -> Link:
    """The link a network name describes ("10GbE with TCP/IP" -> 10 GbE); one error otherwise."""
    text = " ".join(str(network).split())
    if not text or len(text) > 200:
        raise NetworkNameError(f"network: empty or overlong name; accepted forms: {ACCEPTED}")
    lower = text.lower()
    candidate = _candidate(lower)
    if candidate is not None:
        try:
            return get_link(candidate)
        except ValueError:
            pass
    raise NetworkNameError(
        f"network: cannot tell the link from {network!r}; accepted forms: {ACCEPTED}"
    )


def _candidate(lower: str) -> str | None:
    """The costmodels.hardware link name the lower-case text points to, or None."""
    generation = re.search(r"(?:infiniband|\bib)\s*(edr|hdr|ndr)\b", lower)
    if generation:
        return f"InfiniBand {generation.group(1).upper()}"
    speed = re.search(r"([0-9]+)\s*g(?:b|bit|bps)?(?:/s)?", lower) or re.search(
        r"roce\s*([0-9]+)", lower
    )
    if speed is None:
        return None
    gbit = speed.group(1)
    infiniband = "infiniband" in lower or re.search(
        r"(?<![a-z])ib(?![a-z])|[0-9]g(?:b|bps)?ib\b", lower
    )
    ethernet = re.search(r"[0-9]g(?:b|bps)?e\b|gbe\b|ethernet", lower)
    if infiniband:
        return _IB_SPEEDS.get(gbit)
    if "roce" in lower or ("rdma" in lower and ethernet):
        return f"RoCE {gbit}"
    return f"{gbit} GbE" if ethernet else None
