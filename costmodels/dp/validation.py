"""Check predictions against measured runs: calibrate on BSP rows, predict every other row.

Input: a CSV in the layout of Shi et al.'s measured data
(costmodels/data/paper-a-measured-10gbe.csv: dnn, batch_per_gpu, network, method, gpus,
throughput_mean, throughput_std, single_gpu, scaling_eff; "#" lines are comments).

What each row ran and its prediction on the testbed: costmodels/dp/validation_testbed.py (its
names are importable from here).

:func:`fit_testbed` fits, per network, the links below and then two constants the BSP rows cannot
show (issue 43): the single-node overlap (costmodels.dp.validation_overlap) and the cost of
ByteScheduler's PyTorch plugin (costmodels.dp.validation_plugin), both from non-BSP rows; so
:func:`validate`'s MAPE over the non-BSP rows is in-sample for those two, and the held-out check
is costmodels.dp.validation_lodo (every constant fitted with one model left out).

Calibration, per network and architecture, from that network's BSP rows only (BSP exposes all
communication, so it identifies the link): for each BSP row the bandwidth at which the predicted
iteration time equals the measured one (bisection; the prediction falls as the bandwidth grows),
then the median over the rows. The intra-node bandwidth comes from the single-node rows, the
inter-node one from the others with the intra-node link fixed. Every fitted bandwidth is at most
the link's nominal rate (PCIe 3.0 x16 inside a node; the named network, one NIC per node shared
by its 4 GPUs, between nodes): a row the model can explain only with a faster link does not
identify it and is left out; when no row identifies a level, the link's achievable rate (its
preset) is kept and ``notes`` says so. (Unbounded, the 100 Gb InfiniBand rows of the first
survey once fitted ~10 TB/s: every prediction was then too fast.) All-reduce rows and
parameter-server rows get separate links because they run different software (NCCL over sockets
against ps-lite over ZeroMQ); a network without BSP-PS rows lends its all-reduce fit to the PS
rows. Latencies are the presets of costmodels.hardware (PCIe 3 inside a node, the named network
between nodes), except that a TCP/IP network gets the kernel TCP stack's per-step latency
whatever its fabric (costmodels.dp.tcp_regime). No knob is tuned per row.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from costmodels.dp.tcp_regime import inter_latency_s
from costmodels.dp.validation_overlap import fit_overlap, overlap_rows
from costmodels.dp.validation_plugin import fit_plugin_overhead, plugin_rows
from costmodels.dp.validation_rows import ALLREDUCE, GPUS_PER_NODE, METHODS, Row, read_rows, run_of
from costmodels.dp.validation_testbed import (
    INTRA_LINK,
    link_ceilings,
    link_priors,
    predicted_iteration_s,
    predicted_run_s,
    row_method,
)

__all__ = ["ALLREDUCE", "METHODS", "Calibration", "Checked", "Fits", "Row", "calibrate",
           "fit_testbed", "predict_rows", "predicted_iteration_s", "read_rows", "rising_root",
           "row_method", "validate"]  # fmt: skip


@dataclass(frozen=True)
class Calibration:
    """Fitted effective bandwidths of one network and architecture; latencies are presets."""

    network: str
    architecture: str
    alpha_intra: float
    beta_intra: float
    alpha: float
    beta: float
    rows: int  # BSP rows the fit used
    identified: tuple[str, ...] = ("intra", "inter")  # levels the rows identified
    notes: tuple[str, ...] = ()  # why a level was not identified (its prior was kept)
    intra_overlap: float = 1.0  # one node's exchange speed share during backward (fit_overlap)
    plugin_overhead_s: float = 0.0  # ByteScheduler plugin, s per iteration (validation_plugin)

    @property
    def node_network_Bps(self) -> float:
        """The fitted network of one testbed node (its NIC), from the per-GPU share 1/beta."""
        return GPUS_PER_NODE / self.beta

    def link(self) -> dict[str, float]:
        return dict(intra_bandwidth_Bps=1 / self.beta_intra, intra_latency_s=self.alpha_intra,
                    inter_bandwidth_Bps=1 / self.beta, inter_latency_s=self.alpha,
                    intra_overlap=self.intra_overlap,
                    plugin_overhead_s=self.plugin_overhead_s)  # fmt: skip


LOW_BPS, HIGH_BPS = 1e6, 1e13  # the bisection's bracket: 8 Mbit/s to 80 Tbit/s


def _implied_bandwidth(
    row: Row, link: dict[str, float], key: str, allreduce: str = ALLREDUCE,
    ceiling: float = HIGH_BPS,
) -> float | None:  # fmt: skip
    """The bandwidth ``key`` at which the row's predicted time equals the measured one, or None
    when even ``ceiling`` predicts it slower than measured (the row cannot identify the link:
    something other than this link is faster than modelled) or when 8 Mbit/s is too fast;
    solved once per distinct run."""
    fixed = tuple(sorted((k, v) for k, v in link.items() if k != key))
    try:
        return _implied(run_of(row), row.measured_iteration_s, fixed, key, allreduce, ceiling)
    except ValueError as exc:
        raise ValueError(f"{row.where or 'row'}: {exc}") from None


@functools.lru_cache(maxsize=65_536)
def _implied(
    run: Row, measured_s: float, fixed: tuple[tuple[str, float], ...], key: str, allreduce: str,
    ceiling: float,
) -> float | None:  # fmt: skip
    def excess(seconds_per_byte: float) -> float:  # grows with 1/B: nearly linearly for BSP
        link = tuple(sorted((*fixed, (key, 1.0 / seconds_per_byte))))
        return predicted_run_s(run, link, allreduce) / measured_s - 1.0

    fastest, slowest = 1.0 / ceiling, 1.0 / LOW_BPS
    if excess(fastest) > 1e-9 or not excess(slowest) > 1e-9:  # beyond rounding
        return None
    return 1.0 / rising_root(excess, fastest, slowest)


def rising_root(f: Callable[[float], float], low: float, high: float, rtol: float = 1e-10) -> float:
    """Where the non-decreasing ``f`` crosses 0 in [low, high], 0 < low (an end when it does
    not cross).

    Regula falsi with the Illinois rule (M. Dowell and P. Jarratt, "A modified regula falsi
    method for computing the root of an equation", BIT 11, 1971), which needs a few evaluations
    where ``f`` is nearly linear (a BSP iteration is compute + bytes / B, linear in 1/B); every
    third step that did not shrink the bracket four-fold, a bisection of its logarithm, so steps
    (NCCL's protocol switches) converge as bisection over the bracket's decades does.

    >>> round(rising_root(lambda x: x - 2.0, 1e-3, 1e3), 9)
    2.0
    """
    f_low, f_high = f(low), f(high)
    if f_low >= 0:
        return low
    if f_high <= 0:
        return high
    kept, steps, before = 0, 0, high - low  # kept: which end survived the last step
    while high - low > rtol * high:
        steps += 1
        if steps % 3 == 0 and high - low > before / 4:
            x = math.sqrt(low * high)
        else:
            x = low - f_low * (high - low) / (f_high - f_low)
            x = x if low < x < high else math.sqrt(low * high)
        if steps % 3 == 0:
            before = high - low
        value = f(x)
        if abs(value) <= 1e-13:
            return x
        if value < 0:
            low, f_low = x, value
            f_high = f_high / 2 if kept == -1 else f_high
            kept = -1
        else:
            high, f_high = x, value
            f_low = f_low / 2 if kept == 1 else f_low
            kept = 1
    return (low + high) / 2


def calibrate(
    rows: list[Row], network: str, architecture: str = "allreduce", allreduce: str = ALLREDUCE
) -> Calibration:
    """Fit one network's links for one architecture from its BSP rows (module docstring)."""
    prefix = {"allreduce": "BSP-A2A", "ps": "BSP-PS"}[architecture]
    bsp = [r for r in rows if r.network == network and r.method == prefix]
    if architecture == "ps" and not bsp:
        return replace(calibrate(rows, network, "allreduce", allreduce), architecture="ps", rows=0)
    single = [r for r in bsp if r.gpus <= GPUS_PER_NODE and r.gpus > 1]
    multi = [r for r in bsp if r.gpus > GPUS_PER_NODE]
    inter_latency = inter_latency_s(network)  # costmodels.dp.tcp_regime
    ceiling, prior = link_ceilings(network), link_priors(network)
    link = dict(intra_bandwidth_Bps=ceiling["intra_bandwidth_Bps"],
                intra_latency_s=INTRA_LINK.latency_s,
                inter_bandwidth_Bps=ceiling["inter_bandwidth_Bps"],
                inter_latency_s=inter_latency)  # fmt: skip
    if not single and not multi:
        raise ValueError(f"network {network!r}: no {prefix} rows on 2 or more GPUs to calibrate")
    identified, notes = [], []
    for level, rows in (("intra", single), ("inter", multi)):
        key = f"{level}_bandwidth_Bps"
        implied = [_implied_bandwidth(r, link, key, allreduce, ceiling[key]) for r in rows]
        known = [b for b in implied if b is not None]
        if known:
            link[key] = float(np.median(known))
            identified.append(level)
            if len(known) < len(implied):
                notes.append(f"{level}: {len(implied) - len(known)} of {len(implied)} {prefix} "
                             f"rows ran faster than the nominal {ceiling[key] / 1e9:.4g} GB/s per "
                             "GPU allows: left out of the fit")  # fmt: skip
        elif rows:
            link[key] = prior[key]
            notes.append(f"{level}: no {prefix} row can be explained at or below the link's "
                         f"nominal {ceiling[key] / 1e9:.4g} GB/s per GPU (they run faster than "
                         f"it allows): not identified, the link's achievable "
                         f"{prior[key] / 1e9:.4g} GB/s kept")  # fmt: skip
    if not single:  # fitted together with the network from the multi-node rows
        link["intra_bandwidth_Bps"] = max(link["inter_bandwidth_Bps"],
                                          prior["intra_bandwidth_Bps"])  # fmt: skip
        notes.append("intra: no single-node rows: the link's achievable rate (or the network's, "
                     "if faster) kept")  # fmt: skip
    if not multi:
        link["inter_bandwidth_Bps"] = min(link["intra_bandwidth_Bps"],
                                          ceiling["inter_bandwidth_Bps"])  # fmt: skip
        notes.append("inter: no multi-node rows: bounded by the network's nominal rate")
    return Calibration(
        network, architecture, INTRA_LINK.latency_s, 1 / link["intra_bandwidth_Bps"],
        inter_latency, 1 / link["inter_bandwidth_Bps"], len(single) + len(multi),
        tuple(identified), tuple(notes),
    )  # fmt: skip


@dataclass(frozen=True)
class Checked:
    row: Row
    predicted: float  # samples/s
    used_for_fit: bool

    @property
    def error(self) -> float:
        return (self.predicted - self.row.measured) / self.row.measured


Fits = dict[tuple[str, str], Calibration]  # (network, architecture) -> fit


def fit_testbed(rows: list[Row], allreduce: str = ALLREDUCE) -> Fits:
    """Every network's links per architecture (BSP rows), then its single-node overlap
    (costmodels.dp.validation_overlap, non-BSP rows of one node), then ByteScheduler's plugin
    cost (costmodels.dp.validation_plugin); what ``rows`` identify."""
    networks = sorted({r.network for r in rows})
    fits = {(n, a): calibrate(rows, n, a, allreduce) for n in networks for a in ("allreduce", "ps")}
    for network in networks:
        overlap = fit_overlap(
            overlap_rows(rows, network),
            lambda r: fits[(r.network, METHODS[r.method].architecture)].link(), allreduce,
        )  # fmt: skip
        for architecture in ("allreduce", "ps"):
            key = (network, architecture)
            fits[key] = replace(fits[key], intra_overlap=overlap)
        allreduce_fit = fits[(network, "allreduce")]  # then the plugin's cost, overlap in place
        plugin = fit_plugin_overhead(
            plugin_rows(rows, network), lambda r, fit=allreduce_fit: fit.link(), allreduce
        )
        fits[(network, "allreduce")] = replace(allreduce_fit, plugin_overhead_s=plugin)
    return fits


def predict_rows(
    rows: list[Row], fits: Fits, allreduce: str = ALLREDUCE, fitted: Callable[[Row], bool] = bool
) -> list[Checked]:
    """Each row predicted with the fit of its network and architecture; ``fitted(row)`` says
    whether the row informed the links (the BSP rows of the fit set)."""
    checked = []
    for row in rows:
        key = (row.network, METHODS[row.method].architecture)
        if key not in fits:
            raise ValueError(f"{row.where or 'row'}: no fit for network {row.network!r}")
        throughput = row.batch * row.gpus / predicted_iteration_s(row, fits[key].link(), allreduce)
        checked.append(Checked(row, throughput, fitted(row)))
    return checked


def validate(
    rows: list[Row], allreduce: str = ALLREDUCE
) -> tuple[list[Calibration], list[Checked], float]:
    """Calibrate each network, predict every row; MAPE (%) over the rows not used in the fit."""
    if not rows:
        raise ValueError("no measured rows to check (the data file has none)")
    fits = fit_testbed(rows, allreduce)
    checked = predict_rows(rows, fits, allreduce, lambda r: r.method.startswith("BSP-"))
    held_out = [abs(c.error) for c in checked if not c.used_for_fit]
    if not held_out:
        raise ValueError("no rows besides the BSP ones (used for the fit) to predict")
    return list(fits.values()), checked, 100 * float(np.mean(held_out))
