"""The NCCL model with only a cluster preset against the dev series of cloud networks.

Two series (tests/costmodels/data/cloud_networks, SOURCES.md there):

* EFA: all-reduce of 256 MiB on 1-64 nodes of 8 x H100 over AWS EFA (medians; bus bandwidth,
  SOURCES.md says why), predicted with ``--cluster aws-p5``;
* TCPXO: nccl-tests all_reduce_perf on 2 x 8 H100 of Google Cloud A3 Mega, 8 B - 8 GiB
  (out-of-place times), predicted with ``--cluster gcp-a3-mega``.

Both are dev data: the EFA node scaling (costmodels.nccl.scaling) was fitted on the first, the
TCPXO hop latency and efficiency and the one-GPU-per-process fixed costs
(costmodels/nccl/constants.py) on the second, so the errors below are in-sample.

Example::

    >>> rows = efa_allreduce()
    >>> [r.nodes for r in rows]
    [1, 2, 4, 8, 16, 32, 64]
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "costmodels" / "data" / "cloud_networks"
EFA_FILE = "efa-allreduce-vs-nodes-dev.csv"
GCP_FILE = "gcp-a3mega-2node-allreduce-dev.csv"
EFA_BYTES = 256 * 2**20


@dataclass(frozen=True)
class SeriesPoint:
    """One measured point and the preset-only prediction."""

    nodes: int
    size_bytes: float
    measured_busbw_Bps: float
    predicted_busbw_Bps: float
    choice: str

    @property
    def error(self) -> float:
        """predicted / measured - 1 (busbw; the same as measured / predicted time - 1)."""
        return self.predicted_busbw_Bps / self.measured_busbw_Bps - 1


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA_DIR / name, encoding="utf-8") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def efa_allreduce() -> list[SeriesPoint]:
    """The EFA series with ``--cluster aws-p5`` (the source's GPUs: 8 per node)."""
    from costmodels.nccl.presets import cluster_system
    from costmodels.nccl.tuner import collective_time

    out = []
    for row in _rows(EFA_FILE):
        nodes = int(row["nodes"])
        est = collective_time("all-reduce", [EFA_BYTES], cluster_system("aws-p5", 8 * nodes))
        out.append(SeriesPoint(nodes, EFA_BYTES, float(row["bw_median_GBps"]) * 1e9,
                               float(est.busbw_Bps[0]),
                               f"{est.algorithm[0]}/{est.protocol[0]}"))  # fmt: skip
    return out


def gcp_allreduce() -> list[SeriesPoint]:
    """The A3 Mega series with ``--cluster gcp-a3-mega`` on 16 GPUs (busbw from the times)."""
    from costmodels.nccl.presets import cluster_system
    from costmodels.nccl.tuner import collective_time

    rows = _rows(GCP_FILE)
    sizes = np.array([float(r["size_bytes"]) for r in rows])
    seconds = np.array([float(r["oop_time_us"]) * 1e-6 for r in rows])
    system = cluster_system("gcp-a3-mega", 16)
    est = collective_time("all-reduce", sizes, system)
    factor = 2 * 15 / 16
    return [SeriesPoint(2, float(n), n / t * factor, float(b), f"{a}/{p}")
            for n, t, b, a, p in zip(sizes, seconds, est.busbw_Bps, est.algorithm,
                                     est.protocol, strict=True)]  # fmt: skip


def summary(points: list[SeriesPoint], low: float = 0.0, high: float = float("inf")) -> dict:
    """Mean and largest |error| of the points with low <= size < high."""
    errors = [abs(p.error) for p in points if low <= p.size_bytes < high]
    if not errors:
        return {"points": 0, "mean": 0.0, "max": 0.0}
    return {"points": len(errors), "mean": float(np.mean(errors)), "max": float(max(errors))}
