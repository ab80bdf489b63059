"""Check predictions against measured runs: calibrate on BSP rows, predict every other row.

Input: a CSV in the layout of Shi et al.'s measured data
(costmodels/data/paper-a-measured-10gbe.csv: dnn, batch_per_gpu, network, method, gpus,
throughput_mean, throughput_std, single_gpu, scaling_eff; "#" lines are comments).

Per network, the effective link parameters are fitted from that network's BSP rows only (BSP-A2A
and BSP-PS): BSP exposes all communication, so measured iteration time minus the single-GPU step
time is the time of one message of the whole gradient. With one message per iteration the
per-message latency cannot be told apart from the bandwidth, so latencies are the link presets
of costmodels.hardware (PCIe 3 inside a node, the network named in the row between nodes) and
only the two effective bandwidths are fitted: the intra-node one from single-node all-reduce
rows, the inter-node one from the other BSP rows. No knob is tuned per row; every other row is
then predicted with its schedule.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costmodels.hardware import Link, get_link
from costmodels.predict import Cluster, Method, message_seconds, predict
from costmodels.workloads import get_workload

GPUS_PER_NODE = 4  # Shi et al.'s testbed: 8 nodes x 4 GPUs, PCIe inside a node
INTRA_LINK = get_link("pcie3")  # its latency preset; the bandwidth is fitted
METHODS: dict[str, Method] = {
    "BSP-A2A": Method("allreduce", "bsp"),
    "WFBP-A2A": Method("allreduce", "wfbp"),
    "MG-WFBP": Method("allreduce", "mg-wfbp"),
    "ByteScheduler-A2A": Method("allreduce", "bytescheduler"),
    "BSP-PS": Method("ps", "bsp"),
    "WFBP-PS": Method("ps", "wfbp"),
    "ByteScheduler-PS": Method("ps", "bytescheduler"),
}
WORKLOADS = {"ResNet-50": "resnet50", "BERT-Base": "bert-base", "BERT-Large": "bert-large"}


@dataclass(frozen=True)
class Row:
    dnn: str
    batch: int
    network: str
    method: str
    gpus: int
    measured: float  # samples/s
    single_gpu: float  # samples/s on one GPU

    @property
    def step_s(self) -> float:
        return self.batch / self.single_gpu

    @property
    def measured_iteration_s(self) -> float:
        return self.batch * self.gpus / self.measured


def read_rows(path: Path) -> list[Row]:
    """Parse the CSV; errors name the file, line and column."""
    text = Path(path).read_text(encoding="utf-8").splitlines()
    lines = [(i + 1, line) for i, line in enumerate(text) if line and not line.startswith("#")]
    reader = csv.DictReader(line for _, line in lines)
    rows = []
    for (number, _), record in zip(lines[1:], reader, strict=True):
        try:
            row = Row(
                dnn=record["dnn"], batch=int(record["batch_per_gpu"]), network=record["network"],
                method=record["method"], gpus=int(record["gpus"]),
                measured=float(record["throughput_mean"]), single_gpu=float(record["single_gpu"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{number}: bad row ({exc})") from None
        if row.method not in METHODS or row.dnn not in WORKLOADS:
            raise ValueError(f"{path}:{number}: unknown method {row.method!r} or dnn {row.dnn!r}")
        rows.append(row)
    return rows


def _cluster(gpus: int, link: dict[str, float]) -> Cluster:
    nodes = max(1, math.ceil(gpus / GPUS_PER_NODE))
    return Cluster(nodes=nodes, gpus_per_node=min(gpus, GPUS_PER_NODE), **link)


def network_link(network: str) -> Link:
    """The nominal link a network's name describes ("10GbE with TCP/IP" -> 10 GbE)."""
    match = re.search(r"(\d+)\s*G(?:b|bps)?\s*E", network, flags=re.I)
    if match:
        return get_link(f"{match.group(1)}gbe")
    match = re.search(r"(\d+)\s*G(?:b|bps)?\s*(?:IB|InfiniBand)", network, flags=re.I)
    if match:
        return get_link({"100": "ib-edr", "200": "ib-hdr", "400": "ib-ndr"}[match.group(1)])
    raise ValueError(f"cannot tell the link from the network name {network!r}")


def _message_seconds_per_byte(
    row: Row, intra: bool, latencies: tuple[float, float]
) -> tuple[float, float]:
    """(time at zero transfer cost, seconds added per unit of the fitted link's s/byte)."""
    workload = get_workload(WORKLOADS[row.dnn])
    nbytes = workload.params * 4
    method = METHODS[row.method]
    intra_latency, inter_latency = latencies

    def time(per_byte: float) -> float:
        fitted, other = 1 / per_byte, 1e30  # the link not being fitted is made free
        link = dict(
            intra_bandwidth_Bps=fitted if intra else other,
            intra_latency_s=intra_latency,
            inter_bandwidth_Bps=other if intra else fitted,
            inter_latency_s=inter_latency,
        )
        return message_seconds(method, _cluster(row.gpus, link), nbytes)

    base = time(1e-30)
    return base, time(1.0) - base


def _fit_per_byte(rows: list[Row], intra: bool, latencies: tuple[float, float]) -> float:
    """Robust fit of one link's seconds per byte: the median of what each BSP row implies.

    The median keeps a few rows that do not fit the model (for example BERT's first multi-node
    rows) from dragging the whole link; latencies stay at their presets.
    """
    if not rows:
        raise ValueError(f"no BSP rows to fit the {'intra' if intra else 'inter'}-node link")
    base, slope = np.array([_message_seconds_per_byte(r, intra, latencies) for r in rows]).T
    y = np.array([r.measured_iteration_s - r.step_s for r in rows])
    crosses = slope > 0  # rows whose messages never use this link say nothing about it
    if not crosses.any():
        raise ValueError(f"no BSP row sends over the {'intra' if intra else 'inter'}-node link")
    implied = (y[crosses] - base[crosses]) / slope[crosses]
    return max(float(np.median(implied)), 1e-15)


@dataclass(frozen=True)
class Calibration:
    """Fitted effective bandwidths; latencies are the link presets (costmodels.hardware)."""

    network: str
    alpha_intra: float
    beta_intra: float
    alpha: float
    beta: float

    def link(self) -> dict[str, float]:
        return dict(intra_bandwidth_Bps=1 / self.beta_intra, intra_latency_s=self.alpha_intra,
                    inter_bandwidth_Bps=1 / self.beta, inter_latency_s=self.alpha)  # fmt: skip


def calibrate(rows: list[Row], network: str) -> Calibration:
    bsp = [r for r in rows if r.network == network and r.method.startswith("BSP-")]
    single_node = [r for r in bsp if r.method == "BSP-A2A" and r.gpus <= GPUS_PER_NODE]
    multi = [r for r in bsp if r not in single_node]
    latencies = (INTRA_LINK.latency_s, network_link(network).latency_s)
    beta_intra = _fit_per_byte(single_node, True, latencies)
    # The inter-node fit sees intra-node phases (PS nodes reduce locally first) at the fitted
    # intra speed.
    beta = _fit_per_byte(multi, False, latencies) if multi else beta_intra
    return Calibration(network, latencies[0], beta_intra, latencies[1], beta)


@dataclass(frozen=True)
class Checked:
    row: Row
    predicted: float  # samples/s
    used_for_fit: bool

    @property
    def error(self) -> float:
        return (self.predicted - self.row.measured) / self.row.measured


def validate(rows: list[Row]) -> tuple[list[Calibration], list[Checked], float]:
    """Calibrate each network, predict every row; MAPE over the rows not used in the fit."""
    calibrations = {n: calibrate(rows, n) for n in sorted({r.network for r in rows})}
    checked = []
    for row in rows:
        link = calibrations[row.network].link()
        prediction = predict(
            get_workload(WORKLOADS[row.dnn]), row.batch, row.step_s,
            _cluster(row.gpus, link), METHODS[row.method],
        )  # fmt: skip
        checked.append(
            Checked(row, prediction.throughput_samples_per_s, row.method.startswith("BSP-"))
        )
    held_out = [abs(c.error) for c in checked if not c.used_for_fit]
    mape = 100 * float(np.mean(held_out)) if held_out else float("nan")
    return list(calibrations.values()), checked, mape
