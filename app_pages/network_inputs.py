"""The sidebar block for one network link, shared by the calculator pages.

A link is a preset from ``costmodels.hardware.LINKS`` (its achievable bandwidth, i.e. nominal rate
times the achievable fraction, and its typical latency), a custom bandwidth / latency typed as unit
strings ("100 Gbit/s", "5 us"), or, when the Calibrate page has stored a
``costmodels.calibration.profile.ClusterProfile`` in ``st.session_state["cluster_profile"]``, the
fitted
alpha and bandwidth of that profile's ``intra`` or ``inter`` level. An intra-node link may also
"follow the GPU" (``GPU_LINK``, ``follow_gpu=True``): the chosen GPU's own fabric, by the rule
``commatlas predict``/``predict-llm`` use without ``--intra`` (costmodels.llm.intra_link), so it
changes with the GPU on every page that offers it (issue 30).

The *Cluster preset* menu (``cluster_field`` / ``cluster_widget``, values from
``preset_values``, the rule of ``--cluster``) fills a page's GPU, node and network inputs; a page
with prefixed keys (Serving ``sv_*``, Goodput ``gp_*``) passes a generic -> page key mapping and
its own menu key.

Usage::

    fields = link_fields("inter", "100 GbE", "100 Gbit/s", "5 us")   # URL keys inter, inter_bw...
    problems = seed(fields)
    link_widgets("Inter-node link", "inter")
    link = resolve_link("Inter-node link", "inter", "inter")          # raises UnitParseError
    link.bandwidth_Bps, link.latency_s, link.description
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app_pages.query_inputs import Field, text
from costmodels.calibration.profile_links import MissingLevelError, level_fit
from costmodels.formatting import format_bandwidth, format_seconds
from costmodels.hardware import LINKS
from costmodels.units import parse_bandwidth, parse_time

CUSTOM = "Custom bandwidth / latency"
GPU_LINK = "Follows the GPU (its NVLink, else PCIe)"
CALIBRATED = "Calibrated: "
PROFILE_KEY = "cluster_profile"  # set by the Calibrate page (helper H8's contract)


@dataclass(frozen=True)
class LinkChoice:
    """One resolved link in SI units and a line saying where the numbers come from."""

    bandwidth_Bps: float
    latency_s: float
    description: str


def active_profile() -> Any | None:
    """The calibrated ClusterProfile of this session, if the Calibrate page stored one."""
    return st.session_state.get(PROFILE_KEY)


def calibrated_label() -> str | None:
    profile = active_profile()
    return None if profile is None else CALIBRATED + str(profile.name)


def link_options() -> list[str]:
    label = calibrated_label()
    return [*LINKS, CUSTOM, *([label] if label else [])]


def _parse_preset(raw: str) -> str:
    if raw.startswith(CALIBRATED) and raw != calibrated_label():
        raise ValueError("no such calibrated profile in this session (load it on Calibrate)")
    if raw not in link_options():
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise ValueError(f"{shown!r} is not a link preset, {CUSTOM!r} or a calibrated profile")
    return raw


def _parse_or_gpu(raw: str) -> str:
    return raw if raw == GPU_LINK else _parse_preset(raw)


def link_fields(
    prefix: str, preset: str, bandwidth: str, latency: str, follow_gpu: bool = False
) -> list[Field]:
    """The three URL-bound inputs of one link: ``prefix``, ``prefix_bw``, ``prefix_lat``;
    ``follow_gpu`` also accepts ``GPU_LINK`` (an intra-node link that follows the GPU)."""
    return [
        Field(prefix, preset, _parse_or_gpu if follow_gpu else _parse_preset),
        Field(f"{prefix}_bw", bandwidth, text(60)),
        Field(f"{prefix}_lat", latency, text(60)),
    ]


def link_widgets(
    label: str, prefix: str, per: str = "per NIC and direction (one NIC per GPU), e.g. 25 GB/s",
    follow_gpu: bool = False,
) -> None:  # fmt: skip
    """Draw the preset menu and, for a custom link, the bandwidth and latency boxes; ``per``
    says what one bandwidth counts (per GPU, per NIC ...), shown as help on both;
    ``follow_gpu`` puts ``GPU_LINK`` first in the menu."""
    bar = st.sidebar
    options = [GPU_LINK, *link_options()] if follow_gpu else link_options()
    more = "; by default the chosen GPU's own fabric" if follow_gpu else ""
    bar.selectbox(label, options, key=prefix, help=f"bandwidth {per}{more}")
    if st.session_state[prefix] == CUSTOM:
        bar.text_input(f"{label} bandwidth", key=f"{prefix}_bw", help=per)
        bar.text_input(f"{label} latency", key=f"{prefix}_lat", help="per message, e.g. 5 us")


def gpu_link(label: str, gpu: str | None) -> LinkChoice:
    """``GPU_LINK`` resolved for the GPU preset named ``gpu`` (None: no preset, an error)."""
    from costmodels.hardware import GPUS
    from costmodels.llm.intra_link import gpu_intra_link

    if gpu not in GPUS:
        raise ValueError(
            f"{label}: {GPU_LINK!r} needs a GPU preset; choose one, or a link preset or a "
            "custom link here"
        )
    own = gpu_intra_link(GPUS[gpu])
    return LinkChoice(own.bandwidth_Bps, own.latency_s, f"{label}: {own.description}")


def resolve_link(label: str, prefix: str, level: str, gpu: str | None = None) -> LinkChoice:
    """The link the widgets describe; ``level`` ("intra" / "inter") picks a calibrated level;
    ``gpu`` (a GPU preset's name) is the GPU a ``GPU_LINK`` choice follows.

    Raises UnitParseError (a ValueError) naming ``label`` for a bad custom bandwidth or latency.
    """
    choice = st.session_state[prefix]
    if choice == GPU_LINK:
        return gpu_link(label, gpu)
    if choice == CUSTOM:
        bandwidth = parse_bandwidth(st.session_state[f"{prefix}_bw"], f"{label} bandwidth")
        latency = parse_time(st.session_state[f"{prefix}_lat"], f"{label} latency")
        return LinkChoice(
            bandwidth,
            latency,
            f"{label}: custom, {format_bandwidth(bandwidth)}, {format_seconds(latency)}",
        )
    if choice.startswith(CALIBRATED):
        return _calibrated(label, level)
    link = LINKS[choice]
    bandwidth = 1.0 / link.beta_s_per_byte
    return LinkChoice(
        bandwidth,
        link.alpha_s,
        f"{label}: {choice}, {format_bandwidth(link.bandwidth_Bps)} nominal x "
        f"{link.achievable_fraction:g} achievable = {format_bandwidth(bandwidth)}, "
        f"{format_seconds(link.alpha_s)}",
    )


def _calibrated(label: str, level: str) -> LinkChoice:
    profile = active_profile()
    try:
        fit, used = level_fit(profile, level)  # the rule predict --profile and check-ddp share
    except MissingLevelError:
        held = " and ".join(profile.levels)
        raise MissingLevelError(
            f"{label}: the calibrated profile {profile.name!r} has no {level} level (it holds "
            f"{held} only), so it cannot price this link; choose a preset or a custom link "
            f"here, or calibrate on a log that measures the {level}-node level"
        ) from None
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    return LinkChoice(
        float(fit.bandwidth_Bps),
        float(fit.alpha_s),
        f"{label}: calibrated {profile.name!r} {used} fit, "
        f"{format_bandwidth(fit.bandwidth_Bps)}, {format_seconds(fit.alpha_s)}",
    )


NO_CLUSTER = "none (type the hardware)"


def cluster_options() -> list[str]:
    from costmodels.hardware.clusters import cluster_names

    return [NO_CLUSTER, *cluster_names()]


def cluster_field(key: str = "cluster") -> Field:
    """The URL-bound cluster preset input: key ``cluster`` on the pages that share the generic
    keys (gpu, gpus, inter ...), a page's own (``sv_cluster``, ``gp_cluster``) where its keys
    are prefixed, so one page's menu does not claim to have filled another's fields."""
    from app_pages.query_inputs import choice

    return Field(key, NO_CLUSTER, choice(cluster_options()))


def preset_values(name: str, per_gpu_inter: bool = False) -> dict[str, Any]:
    """Session values a cluster preset fills (the same rule as ``--cluster``): GPU, GPUs per
    node, NICs, the NIC as a custom link at its achieved rate (nominal x the transport's
    efficiency; per GPU when ``per_gpu_inter``), the transport's hop latency, SHARP and the
    node's whole network (``node_inter_bw``: NICs x that rate, predict-goodput's peer
    bandwidth)."""
    from costmodels.hardware.clusters import get_cluster
    from costmodels.nccl.transports import get_transport

    preset = get_cluster(name)
    transport = get_transport(preset.transport)
    per_nic = preset.nic_Bps * transport.efficiency
    inter = per_nic * preset.nics_per_node / preset.gpus_per_node if per_gpu_inter else per_nic
    return {"gpu": preset.gpu, "gpus": preset.gpus_per_node, "nics": preset.nics_per_node,
            "inter": CUSTOM, "inter_bw": f"{inter / 1e9:.6g} GB/s",
            "inter_lat": f"{transport.hop_latency_s * 1e6:g} us", "transport": preset.transport,
            "collnet": preset.sharp, "nic": "Custom bandwidth per NIC",
            "nic_bw": f"{per_nic / 1e9:.6g} GB/s",
            "node_inter_bw": f"{per_nic * preset.nics_per_node / 1e9:.6g} GB/s"}  # fmt: skip


CLUSTER_HELP = (
    "fills GPU, GPUs per node, NICs, their rate and the transport from a cloud or vendor system "
    "(commatlas clusters); edit any field afterwards to override it"
)


def cluster_widget(keys: tuple[str, ...] | Mapping[str, str], per_gpu_inter: bool = False, *,
                   menu: str = "cluster", help: str = CLUSTER_HELP) -> None:  # fmt: skip
    """The cluster preset menu (session key ``menu``): choosing one fills the page's ``keys``
    (the preset_values keys it has; a mapping names each one's key on this page, generic ->
    page key, e.g. ``{"gpu": "gp_gpu"}``) from the preset; editing them afterwards overrides
    the preset's field, as explicit flags do. ``help`` says what the menu fills."""
    page = dict(keys) if isinstance(keys, Mapping) else {key: key for key in keys}

    def fill() -> None:
        name = st.session_state[menu]
        if name == NO_CLUSTER:
            return
        for key, value in preset_values(name, per_gpu_inter).items():
            if key in page:
                st.session_state[page[key]] = value

    st.sidebar.selectbox("Cluster preset", cluster_options(), key=menu, on_change=fill, help=help)
