"""The calibration file ``commatlas import-trace --out`` writes and ``--calibration FILE`` reads.

One YAML document (pydantic-validated, unknown keys rejected) with what a trace measured:

- ``gpu``, ``world_size``, ``gpus_per_node``, ``nccl_version``, ``step_time_s``,
  ``exposed_communication_s``, ``overlap_fraction``: as import-trace reports them;
- ``compute``: ``gemm_scale`` and ``memory_bound_scale`` (measured over modelled kernel time,
  costmodels.calibration.trace.compute_efficiency), the achieved GEMM TFLOP/s and HBM share,
  ``kernel_overhead_s``; ``not_identified`` says why a figure is missing;
- ``network``: ``bus_bandwidth`` by (operation, size, group), ``intra_efficiency`` against the
  NCCL model, and ``measurements`` (one per size, in the cluster profile's form) that
  ``collective``/``predict`` fit the network to.

How each command uses it: ``collective``, ``predict`` and ``compare`` price the network with a
cluster profile fitted to ``measurements`` (costmodels.calibration.profile); ``predict-llm`` and
``plan-llm`` scale GEMM/attention and memory-bound/overhead kernel times by the two compute
scales (StepCalibration) and the intra-node link by ``intra_efficiency``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from costmodels.calibration.profile import ClusterProfile, Measurement, profile_from_measurements
from costmodels.limits import (
    MAX_BYTES,
    MAX_CALL_S,
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_MEASUREMENTS,
    MAX_RATE_BPS,
    MAX_STEP_S,
    read_text_bounded,
)
from costmodels.safe_output import write_atomic
from costmodels.yaml_bounded import safe_load_bounded

KIND = "commatlas-calibration"
MAX_CALIBRATION_BYTES = 4_000_000  # a few thousand measured sizes
# What a measured figure may be (issue 35: 1e308 printed "inf %"): a scale of measured over
# modelled time beyond 1000x, an efficiency beyond 10x the model (network_calibration clips the
# intra-node one at the NVLink / fabric ratio, ~2) or 10^5 TFLOP/s is a typing mistake.
MAX_SCALE = 1000.0
MAX_EFFICIENCY = 10.0
MAX_TFLOPS = 1e5
MAX_GBPS = MAX_RATE_BPS / 1e9


class CalibrationError(ValueError):
    """A calibration file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuInfo(_Strict):
    name: str | None = None
    preset: str | None = None
    sms: int | None = Field(default=None, ge=1, le=100_000)
    memory_bytes: int | None = Field(default=None, ge=1, le=MAX_BYTES)

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        from costmodels.hardware import get_gpu

        return None if value is None else get_gpu(value).name


class ComputeSection(_Strict):
    gemm_scale: float | None = Field(default=None, gt=0, le=MAX_SCALE, allow_inf_nan=False)
    gemm_efficiency: float | None = Field(default=None, gt=0, le=MAX_EFFICIENCY,
                                          allow_inf_nan=False)  # fmt: skip
    gemm_tflops: float | None = Field(default=None, gt=0, le=MAX_TFLOPS, allow_inf_nan=False)
    gemm_dtype: str | None = None
    gemm_operators: int = Field(default=0, ge=0, le=10**9)
    memory_bound_scale: float | None = Field(default=None, gt=0, le=MAX_SCALE,
                                             allow_inf_nan=False)  # fmt: skip
    memory_bound_efficiency: float | None = Field(default=None, gt=0, le=MAX_EFFICIENCY,
                                                  allow_inf_nan=False)  # fmt: skip
    memory_bound_GBps: float | None = Field(default=None, gt=0, le=MAX_GBPS, allow_inf_nan=False)
    memory_operators: int = Field(default=0, ge=0, le=10**9)
    kernel_overhead_s: float | None = Field(default=None, ge=0, le=1.0, allow_inf_nan=False)
    not_identified: dict[str, str] = Field(default_factory=dict)


class BusRow(_Strict):
    op: str
    bytes: float = Field(gt=0, le=MAX_BYTES, allow_inf_nan=False)
    group_size: int = Field(ge=1, le=MAX_GPUS)
    level: Literal["intra", "inter"]
    calls: int = Field(ge=1, le=10**12)
    seconds: float = Field(gt=0, le=MAX_CALL_S, allow_inf_nan=False)
    busbw_GBps: float = Field(ge=0, le=MAX_GBPS, allow_inf_nan=False)
    bytes_source: str


class NetworkSection(_Strict):
    ranks: int = Field(default=1, ge=1, le=MAX_GPUS)  # traces aligned (1: with peer waits)
    intra_efficiency: float | None = Field(default=None, gt=0, le=MAX_EFFICIENCY,
                                           allow_inf_nan=False)  # fmt: skip
    bus_bandwidth: list[BusRow] = Field(default_factory=list, max_length=MAX_MEASUREMENTS)
    measurements: list[Measurement] = Field(default_factory=list, max_length=MAX_MEASUREMENTS)
    not_identified: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class Calibration(_Strict):
    """What one or more ranks' traces measured (module docstring)."""

    kind: Literal["commatlas-calibration"] = KIND
    version: Literal[1] = 1
    name: str = Field(min_length=1)
    source: str
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    gpu: GpuInfo = Field(default_factory=GpuInfo)
    world_size: int | None = Field(default=None, ge=1, le=MAX_GPUS)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    nccl_version: str | None = None
    step_time_s: float | None = Field(default=None, gt=0, le=MAX_STEP_S, allow_inf_nan=False)
    exposed_communication_s: float | None = Field(default=None, ge=0, le=MAX_STEP_S,
                                                  allow_inf_nan=False)  # fmt: skip
    overlap_fraction: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    compute: ComputeSection = Field(default_factory=ComputeSection)
    network: NetworkSection = Field(default_factory=NetworkSection)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, data: Any) -> Any:
        """YAML's ``true`` is not the number 1 (pydantic would read it so): no field of the
        file is a yes/no, so a boolean anywhere is refused with its place."""
        where = _boolean_at(data, ())
        if where is not None:
            raise ValueError(f"{'.'.join(where) or '(top level)'}: true/false is not a number")
        return data


def _boolean_at(value: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    if isinstance(value, bool):
        return path
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())  # fmt: skip
    for key, item in items:
        found = _boolean_at(item, (*path, str(key)))
        if found is not None:
            return found
    return None


def calibration_to_yaml(calibration: Calibration) -> str:
    return yaml.safe_dump(calibration.model_dump(mode="json"), sort_keys=False)


def calibration_from_yaml(text: str, origin: str = "<text>") -> Calibration:
    """A calibration from YAML text; errors name ``origin`` and the field."""
    try:  # the bounded loader: 1.3 M values or 600 k aliases in 4 MB stop at its limit
        data = safe_load_bounded(text.removeprefix("\ufeff"), origin)
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise CalibrationError(
            f"{origin}: not a calibration file (it needs 'kind: {KIND}'; "
            "commatlas import-trace --out writes one)"
        )
    try:
        return Calibration.model_validate(data)
    except RecursionError:
        raise CalibrationError(f"{origin}: YAML nested too deeply") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise CalibrationError(
            f"{origin}: {where + ': ' if where else ''}{message}{more}"[:500]
        ) from None


def load_calibration(path: str | Path, what: str = "--calibration") -> Calibration:
    """Read a calibration file (bounded); CalibrationError naming the flag, file and field."""
    try:
        text = read_text_bounded(path, what, MAX_CALIBRATION_BYTES)
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    return calibration_from_yaml(text, f"{what} {path}")


def save_calibration(calibration: Calibration, path: str | Path) -> Path:
    return write_atomic(path, calibration_to_yaml(calibration), "--out")


def calibration_profile(calibration: Calibration) -> ClusterProfile:
    """The cluster profile of the calibration's measured collectives (fitted per collective
    and level where two or more sizes grow in time; CalibrationError when none can be)."""
    measured = list(calibration.network.measurements)
    if not measured:
        raise CalibrationError(
            f"calibration {calibration.name!r}: no collective with known "
            "bytes was measured, so it says nothing about the network"
        )
    ceilings = intra_ceiling(calibration)
    usable: list[Measurement] = []
    for key in sorted({(m.collective, m.level) for m in measured}):
        rows = [m for m in measured if (m.collective, m.level) == key]
        try:
            profile_from_measurements(rows, "probe", "probe", ceilings)
        except ValueError:
            continue  # one size, or times that do not grow: this pair identifies nothing
        usable.extend(rows)
    if not usable:
        raise CalibrationError(
            f"calibration {calibration.name!r}: its collectives cannot be fitted (fewer than two "
            "sizes per collective, or times that do not grow with size)"
        )
    return profile_from_measurements(
        usable, calibration.name, f"import-trace: {calibration.source}", ceilings
    )


def intra_ceiling(calibration: Calibration) -> dict[str, float]:
    """The nominal intra-node bus bandwidth of the trace's GPU, when it has a preset: its NVLink
    rate per direction (twice that with NVLink SHARP, Hopper and newer, where the switch reduces
    and nccl-tests' all-reduce busbw reaches twice the link's rate). No ceiling for the network:
    the NIC is not in the trace."""
    from costmodels.hardware import get_gpu

    if not calibration.gpu.preset:
        return {}
    gpu = get_gpu(calibration.gpu.preset)
    if not gpu.nvlink_Bps:
        return {}
    return {"intra": gpu.nvlink_Bps * (2.0 if gpu.fp8_tflops else 1.0)}
