"""The NCCL model against the nccl-tests logs the project ships (dev data), presets vs fitted.

Logs: tests/costmodels/data/nccl_tests (SOURCES.md there says where each came from). For each,
the cluster is described as a user would type it (GPU preset, nodes, NIC link and count, from
the log's device lines and the vendor's description), and the bus bandwidth from 1 MiB up is
compared with the model's:

* presets: ``system_from_cluster`` with the GPU's fabric and the link preset only;
* fitted: the log read by ``costmodels.calibration.profile.parse_nccl_tests`` and
  ``profile_from_measurements`` (what ``commatlas import-nccl-tests`` writes), then
  ``system_from_profile``: in-sample by construction ("after import on the same cluster").

These logs were used to choose the project's constants in constants.py (launch overhead,
protocol start-up, the -g 8 harness's host cost, point-to-point latency), so the presets figures
are in-sample too; logs of other clusters are kept for independent checks and are not read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LOG_DIR = Path(__file__).resolve().parents[2] / "tests" / "costmodels" / "data" / "nccl_tests"
MIN_BYTES = 2.0**20
_OCI = (
    "OCI A100 cluster node: 8 A100 GPUs with 1.6 Tbit/s (1600 Gbit/s) of RDMA (RoCE) network "
    "per node (blogs.oracle.com 'superclusters-rdma-high-performance'); taken as 16 x RoCE 100"
)


@dataclass(frozen=True)
class ShippedLog:
    """One log and the cluster a user would describe for it."""

    file: str
    op: str
    cluster: dict[str, Any]
    described: str  # where the description comes from

    @property
    def path(self) -> Path:
        return LOG_DIR / self.file


_SUPERBENCH = dict(gpu="A100 40GB SXM", gpus_per_node=8, nodes=1, gpus_per_process=8)
_SUPERBENCH_TEXT = (
    "one node, 8 x A100-SXM4-40GB (the log's device lines); NVSwitch preset; one "
    "process drives the 8 GPUs (the log's header: nThread 1 nGpus 8)"
)
SHIPPED_LOGS = (
    ShippedLog("superbench_8xa100_allreduce.txt", "all-reduce", _SUPERBENCH, _SUPERBENCH_TEXT),
    ShippedLog("superbench_8xa100_allgather.txt", "all-gather", _SUPERBENCH, _SUPERBENCH_TEXT),
    ShippedLog("superbench_8xa100_reducescatter.txt", "reduce-scatter", _SUPERBENCH,
               _SUPERBENCH_TEXT),
    ShippedLog("superbench_8xa100_broadcast.txt", "broadcast", _SUPERBENCH, _SUPERBENCH_TEXT),
    ShippedLog("superbench_8xa100_alltoall.txt", "all-to-all", _SUPERBENCH, _SUPERBENCH_TEXT),
    ShippedLog("oke_2x8xa100_allreduce.txt", "all-reduce",
               dict(gpu="A100 40GB SXM", gpus_per_node=8, nodes=2, inter="RoCE 100",
                    nics_per_node=16), _OCI),
)  # fmt: skip


@dataclass(frozen=True)
class LogComparison:
    """Measured and predicted busbw (bytes/s) of one log at its sizes >= 1 MiB."""

    log: ShippedLog
    sizes: np.ndarray
    measured: np.ndarray
    preset: np.ndarray
    fitted: np.ndarray
    preset_algorithms: tuple[str, ...]
    fitted_system_notes: tuple[str, ...]

    @property
    def preset_error(self) -> float:
        """Mean absolute relative busbw error of the presets."""
        return float(np.mean(np.abs(self.preset / self.measured - 1)))

    @property
    def fitted_error(self) -> float:
        return float(np.mean(np.abs(self.fitted / self.measured - 1)))


def compare(log: ShippedLog) -> LogComparison:
    """Read ``log``, predict it from presets and after importing it."""
    from costmodels.calibration.nccl_from_profile import system_from_profile
    from costmodels.calibration.profile import parse_nccl_tests, profile_from_measurements
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.nccl.tuner import collective_time

    text = log.path.read_text(encoding="utf-8")
    measurements = parse_nccl_tests(text, log.op)
    rows = sorted((m.bytes, m.busbw_Bps) for m in measurements if m.bytes >= MIN_BYTES)
    sizes = np.array([r[0] for r in rows], dtype=float)
    measured = np.array([r[1] for r in rows], dtype=float)
    preset_system = system_from_cluster(**log.cluster)
    preset = collective_time(log.op, sizes, preset_system)
    profile = profile_from_measurements(measurements, log.path.stem, "nccl-tests")
    fitted_system = system_from_profile(profile, preset_system, log.op)
    fitted = collective_time(log.op, sizes, fitted_system)
    return LogComparison(log, sizes, measured, preset.busbw_Bps, fitted.busbw_Bps,
                         tuple(f"{a}/{p}" for a, p in zip(preset.algorithm, preset.protocol,
                                                           strict=True)),
                         fitted_system.notes)  # fmt: skip


def compare_all() -> list[LogComparison]:
    """:func:`compare` for every shipped log."""
    return [compare(log) for log in SHIPPED_LOGS]
