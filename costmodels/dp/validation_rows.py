"""The rows of a validation data file (Shi et al.'s layout) and what each of them ran.

Layout: costmodels/data/paper-a-measured-10gbe.csv (dnn, batch_per_gpu, network, method, gpus,
throughput_mean, throughput_std, single_gpu, scaling_eff; "#" lines are comments). Why each
method is the :class:`~costmodels.dp.predict.Method` below: costmodels/dp/validation_testbed.py.

Every cell is checked with its file, line and column named: whole numbers and decimals in ASCII
digits, a step time (batch_per_gpu / single_gpu) of 1 us to 10^6 s, a throughput at most twice
linear scaling, a spread no larger than the mean. Bounds on the work: at most
``MAX_VALIDATION_ROWS`` rows and ``MAX_VALIDATION_RUNS`` distinct runs (the rest repeat a run
and cost nothing: each run is simulated once; benchmarks/hostile_inputs.py times the largest).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

from costmodels.dp.predict import Method
from costmodels.dp.validation_networks import network_link
from costmodels.limits import MAX_BATCH, MAX_NODES, MAX_STEP_S, MIN_STEP_S, read_text_bounded
from costmodels.schedules.frameworks import (
    BYTEPS,
    BYTESCHEDULER_SHI,
    HOROVOD_0_19,
    HOROVOD_UNFUSED,
)

GPUS_PER_NODE = 4  # Shi et al.'s testbed: 8 nodes x 4 GPUs, PCIe inside a node
ALLREDUCE = "nccl-ring"  # NCCL's ring with its protocols (why not its tuner: validation.py)
METHODS: dict[str, Method] = {
    "BSP-A2A": Method("allreduce", "bsp", ALLREDUCE, **HOROVOD_UNFUSED),
    "WFBP-A2A": Method("allreduce", "wfbp", ALLREDUCE, **HOROVOD_UNFUSED),
    "MG-WFBP": Method("allreduce", "mg-wfbp", ALLREDUCE, plan_greedy=True, **HOROVOD_UNFUSED),
    "ByteScheduler-A2A": Method("allreduce", "bytescheduler", ALLREDUCE, **HOROVOD_0_19,
                                **BYTESCHEDULER_SHI),
    "BSP-PS": Method("ps", "bsp", **BYTEPS),
    "WFBP-PS": Method("ps", "wfbp", **BYTEPS),
    "ByteScheduler-PS": Method("ps", "wfbp", **BYTEPS),  # server-side scheduling: docstring
}  # fmt: skip
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
    measured_std: float = 0.0  # samples/s, over the repeated runs
    where: str = ""  # "file:line" of the data row, for messages

    @property
    def step_s(self) -> float:
        return self.batch / self.single_gpu

    @property
    def measured_iteration_s(self) -> float:
        return self.batch * self.gpus / self.measured


def run_of(row: Row) -> Row:
    """What a prediction depends on: the row without its measurement and line."""
    return replace(row, measured=1.0, measured_std=0.0, where="")


_WHOLE = re.compile(r"^\s*[0-9]{1,10}\s*$")  # ASCII digits, as every number a user types
_DECIMAL = re.compile(
    r"^\s*(?:[0-9]{1,20}\.?[0-9]{0,20}|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?\s*$"
)
MAX_VALIDATION_ROWS = 20_000  # data rows of one file (Shi et al.'s has 84)
MAX_VALIDATION_RUNS = 200  # distinct runs to predict (each is a full simulation): ~10 s at most
MAX_TESTBED_GPUS = GPUS_PER_NODE * MAX_NODES  # the testbed's 4 GPUs per node, at most 2^17 nodes


def _whole(record: dict[str, str], column: str, high: int) -> int:
    text = record.get(column) or ""
    if not _WHOLE.match(text) or not 1 <= int(text) <= high:
        raise ValueError(f"{column} must be a whole number from 1 to {high:,}, got {text[:24]!r}")
    return int(text)


def _decimal(record: dict[str, str], column: str, default: str | None = None) -> float:
    text = record.get(column) or default or ""
    if not _DECIMAL.match(text):
        raise ValueError(f"{column} must be a number like 925.02, got {text[:24]!r}")
    return float(text)


def _row(record: dict[str, str], where: str, networks: dict[str, object]) -> Row:
    """One data row, every column checked (ValueError naming the column)."""
    for column in ("dnn", "network", "method"):
        if not (record.get(column) or "").strip():
            raise ValueError(f"{column} is empty")
    row = Row(
        dnn=record["dnn"], batch=_whole(record, "batch_per_gpu", MAX_BATCH),
        network=record["network"], method=record["method"],
        gpus=_whole(record, "gpus", MAX_TESTBED_GPUS),
        measured=_decimal(record, "throughput_mean"), single_gpu=_decimal(record, "single_gpu"),
        measured_std=_decimal(record, "throughput_std", "0"), where=where,
    )  # fmt: skip
    if row.network not in networks:  # NetworkNameError names the column and the forms
        networks[row.network] = network_link(row.network)
    if row.method not in METHODS:
        raise ValueError(f"method {row.method!r} is not one of {', '.join(METHODS)}")
    if row.dnn not in WORKLOADS:
        raise ValueError(f"dnn {row.dnn!r} is not one of {', '.join(WORKLOADS)}")
    if not row.measured > 0 or not row.single_gpu > 0:
        raise ValueError("throughput_mean and single_gpu must be positive")
    if not MIN_STEP_S <= row.step_s <= MAX_STEP_S:
        raise ValueError(
            f"batch_per_gpu / single_gpu = {row.step_s:.3g} s per step; a step takes "
            f"{MIN_STEP_S:g} s to {MAX_STEP_S:g} s"
        )
    if row.measured > 2 * row.gpus * row.single_gpu:
        raise ValueError(
            f"throughput_mean {row.measured:.4g} is more than twice {row.gpus} GPUs x "
            f"single_gpu {row.single_gpu:.4g} (scaling efficiency above 2)"
        )
    if not row.measured_std <= row.measured:
        raise ValueError(f"throughput_std {row.measured_std:.4g} exceeds throughput_mean")
    return row


def read_rows(path: Path) -> list[Row]:
    """Parse the CSV; every error names the file, the line and the column."""
    text = read_text_bounded(path, "--data").splitlines()
    lines = [(i + 1, line) for i, line in enumerate(text) if line and not line.startswith("#")]
    if len(lines) - 1 > MAX_VALIDATION_ROWS:
        raise ValueError(f"{path}: {len(lines) - 1:,} data rows; at most {MAX_VALIDATION_ROWS:,}")
    reader = csv.DictReader(line for _, line in lines)
    rows: list[Row] = []
    networks: dict[str, object] = {}
    for (number, _), record in zip(lines[1:], reader, strict=True):
        try:
            rows.append(_row(record, f"{path}:{number}", networks))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    if not rows:
        raise ValueError(f"{path}: no measured rows to check (no data lines after the header)")
    runs = {run_of(row) for row in rows}
    if len(runs) > MAX_VALIDATION_RUNS:
        raise ValueError(
            f"{path}: {len(runs):,} distinct runs (dnn, batch, network, method, gpus, "
            f"single_gpu); at most {MAX_VALIDATION_RUNS} are simulated (~10 s); repeated rows "
            "are free"
        )
    return rows
