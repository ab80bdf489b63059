"""Check predictions against measured runs: calibrate on BSP rows, predict every other row.

Input: a CSV in the layout of Shi et al.'s measured data
(costmodels/data/paper-a-measured-10gbe.csv: dnn, batch_per_gpu, network, method, gpus,
throughput_mean, throughput_std, single_gpu, scaling_eff; "#" lines are comments).

What each row ran (HKBU-HPML/ddl-benchmarks, benchmarks.py and the scripts it calls) decides its
:class:`~costmodels.dp.predict.Method`, with the frameworks' documented defaults
(costmodels.schedules.frameworks), never with numbers fitted to these rows:

- *-A2A and MG-WFBP: Horovod 0.19 over NCCL (5 ms cycle, 64 MiB fusion buffer), priced with
  the NCCL model (costmodels.nccl) on the testbed's nodes (4 RTX 2080 Ti on PCIe 3.0 through the
  CPU, one NIC per node) with NCCL's ring algorithm, its protocol chosen per message
  (``nccl-ring``). Why ring: the runs used the NCCL of 2020 (PyTorch 1.4, Horovod 0.19), whose
  tuner on PCIe systems used "trees on small sizes, then rings for larger sizes" (an NCCL
  maintainer, NVIDIA/nccl issue 226, 2019); the project's tuner follows NCCL 2.30, which picks the
  tree at two nodes for large messages (its two-node "double bandwidth" rule). With NCCL's own
  choice (``nccl``) the non-BSP MAPE is 11.5 % instead of 9.4 % (measured when written, every
  other input equal); the difference is the 8-GPU (two-node) rows, which the tree predicts up to
  50 % too fast. BSP-A2A hands
  Horovod one 512 MiB group after backward, WFBP-A2A every tensor as it is ready (Horovod then
  fuses what each cycle finds), MG-WFBP its merged groups, planned by the MG-WFBP code with its
  own alpha-beta table (costmodels/data/paper-a-alpha-beta.csv, the 10GbE or the 56 Gb IB rows);
  ByteScheduler-A2A cuts 4,000,000-byte partitions with a 16,000,000-byte credit.
- *-PS: BytePS with 4,096,000-byte partitions, one server machine per worker machine; WFBP-PS
  pushes each tensor as it is ready. ByteScheduler-PS is the same BytePS run with the servers'
  priority scheduling switched on (BYTEPS_SERVER_ENABLE_SCHEDULE=1 in byteps/launch.sh): the
  workers still push every tensor as it is ready with no credit limit (BYTEPS_SCHEDULING_CREDIT
  unset) and wait for every push-pull before the optimizer step, and the ranks' priorities come
  from the order the tensors were declared (sorted by name in ddl-benchmarks'
  byteps_distributed_optimizer.py), not from the layer order. So its worker side is WFBP-PS's
  and it is predicted as WFBP-PS; the measured pairs differ by 0-3%, within their spread.

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
between nodes). No knob is tuned per row.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from costmodels.dp.predict import Cluster, Method, predict
from costmodels.dp.validation_networks import network_kind, network_link
from costmodels.dp.validation_rows import (
    ALLREDUCE,
    GPUS_PER_NODE,
    METHODS,
    WORKLOADS,
    Row,
    read_rows,
    run_of,
)
from costmodels.hardware import get_link
from costmodels.workloads import get_workload

__all__ = ["ALLREDUCE", "METHODS", "Calibration", "Checked", "Row", "calibrate", "rising_root",
           "predicted_iteration_s", "read_rows", "row_method", "validate"]  # fmt: skip

INTRA_LINK = get_link("pcie3")  # its latency preset; the bandwidth is fitted
TESTBED_GPU = "RTX 2080 Ti"  # the fabric NCCL runs on: PCIe 3.0 through the CPU
# One adapter per node as the NCCL system's NICs. The Horovod script names two Ethernet
# interfaces (NCCL_SOCKET_IFNAME in ddl-benchmarks horovod/horovod_mpi_cj.sh); with 2 the
# calibrated per-GPU share halves and every prediction is the same (checked when written).
NICS_PER_NODE = 1
ALPHA_BETA = Path(__file__).resolve().parents[1] / "data" / "paper-a-alpha-beta.csv"


@functools.lru_cache(maxsize=8)
def planner_table(network: str) -> dict[int, tuple[float, float]]:
    """MG-WFBP's own (alpha, beta) per worker count for the network's kind (its source picks
    the 56 Gb IB table when run with RDMA and the 10GbE one otherwise)."""
    table = "56Gbps_IB" if network_kind(network) == "infiniband" else "10GbE"
    entries: dict[int, tuple[float, float]] = {}
    for line in ALPHA_BETA.read_text(encoding="utf-8").splitlines():
        fields = line.split(",")
        if line.startswith("#") or fields[0] != table:
            continue
        entries[int(fields[1])] = (float(fields[2]), float(fields[3]))
    return entries


def row_method(row: Row, allreduce: str = ALLREDUCE) -> Method:
    """The Method the row ran (module docstring), MG-WFBP with its planner's alpha-beta;
    ``allreduce`` replaces the all-reduce of the all-reduce methods (e.g. "nccl")."""
    method = METHODS[row.method]
    if method.architecture == "allreduce" and allreduce != method.collective:
        method = replace(method, collective=allreduce)
    if method.schedule == "mg-wfbp":
        # Its table stops at 64 workers; another count plans with the nearest entry (an
        # assumption; planning with the NCCL model instead costs ~0.5 s per BERT-Large run).
        table = planner_table(row.network)
        nearest = min(table, key=lambda workers: (abs(math.log(workers / row.gpus)), workers))
        plan = table[nearest]
        return replace(method, plan_alpha_s=plan[0], plan_beta_s_per_byte=plan[1])
    return method


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

    @property
    def node_network_Bps(self) -> float:
        """The fitted network of one testbed node (its NIC), from the per-GPU share 1/beta."""
        return GPUS_PER_NODE / self.beta

    def link(self) -> dict[str, float]:
        return dict(intra_bandwidth_Bps=1 / self.beta_intra, intra_latency_s=self.alpha_intra,
                    inter_bandwidth_Bps=1 / self.beta, inter_latency_s=self.alpha)  # fmt: skip


def cluster_of(gpus: int, link: dict[str, float]) -> Cluster:
    """Shi et al.'s testbed: nodes of 4 RTX 2080 Ti on PCIe 3.0, one NIC per node (so the
    fitted inter-node bandwidth is one GPU's share of that NIC, costmodels.dp.cluster)."""
    nodes = max(1, math.ceil(gpus / GPUS_PER_NODE))
    return Cluster(nodes=nodes, gpus_per_node=min(gpus, GPUS_PER_NODE), gpu=TESTBED_GPU,
                   nics_per_node=NICS_PER_NODE, **link)  # fmt: skip


def predicted_iteration_s(row: Row, link: dict[str, float], allreduce: str = ALLREDUCE) -> float:
    """The row's predicted iteration time on ``link``; the same run on the same link is
    predicted once (a data file may repeat rows, and the fit tries each link many times)."""
    try:
        return _predicted(run_of(row), tuple(sorted(link.items())), allreduce)
    except ValueError as exc:  # a run the models refuse: name the data row, not a field
        raise ValueError(f"{row.where or 'row'}: {exc}") from None


@functools.lru_cache(maxsize=65_536)
def _predicted(row: Row, link: tuple[tuple[str, float], ...], allreduce: str) -> float:
    workload = get_workload(WORKLOADS[row.dnn])
    cluster = cluster_of(row.gpus, dict(link))
    method = row_method(row, allreduce)
    return predict(workload, row.batch, row.step_s, cluster, method).iteration_time_s


LOW_BPS, HIGH_BPS = 1e6, 1e13  # the bisection's bracket: 8 Mbit/s to 80 Tbit/s


def link_ceilings(network: str) -> dict[str, float]:
    """The fastest each fitted link may be: its nominal rate (PCIe 3.0 x16 per GPU inside a
    node; the named network's rate, one NIC per node shared by its GPUs, between nodes). A fit
    above it would be a link faster than the hardware, i.e. the data say something else is off
    (issue 28: the 100 Gb InfiniBand rows once fitted 10 TB/s)."""
    return {"intra_bandwidth_Bps": INTRA_LINK.bandwidth_Bps,
            "inter_bandwidth_Bps": network_link(network).bandwidth_Bps * NICS_PER_NODE
            / GPUS_PER_NODE}  # fmt: skip


def link_priors(network: str) -> dict[str, float]:
    """What a link is taken to be when the rows cannot identify it: its achievable rate."""
    inter = network_link(network)
    return {"intra_bandwidth_Bps": INTRA_LINK.bandwidth_Bps * INTRA_LINK.achievable_fraction,
            "inter_bandwidth_Bps": inter.bandwidth_Bps * inter.achievable_fraction
            * NICS_PER_NODE / GPUS_PER_NODE}  # fmt: skip


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
        return _predicted(run, link, allreduce) / measured_s - 1.0

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
    inter_latency = network_link(network).latency_s
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


def validate(
    rows: list[Row], allreduce: str = ALLREDUCE
) -> tuple[list[Calibration], list[Checked], float]:
    """Calibrate each network, predict every row; MAPE (%) over the rows not used in the fit."""
    if not rows:
        raise ValueError("no measured rows to check (the data file has none)")
    networks = sorted({r.network for r in rows})
    fits = {(n, a): calibrate(rows, n, a, allreduce) for n in networks for a in ("allreduce", "ps")}
    checked = []
    for row in rows:
        link = fits[(row.network, METHODS[row.method].architecture)].link()
        throughput = row.batch * row.gpus / predicted_iteration_s(row, link, allreduce)
        checked.append(Checked(row, throughput, row.method.startswith("BSP-")))
    held_out = [abs(c.error) for c in checked if not c.used_for_fit]
    if not held_out:
        raise ValueError("no rows besides the BSP ones (used for the fit) to predict")
    return list(fits.values()), checked, 100 * float(np.mean(held_out))
