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
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costmodels.calibration.profile import ClusterProfile, Measurement, profile_from_measurements
from costmodels.limits import read_text_bounded
from costmodels.safe_output import write_atomic

KIND = "commatlas-calibration"
MAX_CALIBRATION_BYTES = 4_000_000  # a few thousand measured sizes


class CalibrationError(ValueError):
    """A calibration file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuInfo(_Strict):
    name: str | None = None
    preset: str | None = None
    sms: int | None = Field(default=None, ge=1)
    memory_bytes: int | None = Field(default=None, ge=1)


class ComputeSection(_Strict):
    gemm_scale: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    gemm_efficiency: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    gemm_tflops: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    gemm_dtype: str | None = None
    gemm_operators: int = Field(default=0, ge=0)
    memory_bound_scale: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    memory_bound_efficiency: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    memory_bound_GBps: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    memory_operators: int = Field(default=0, ge=0)
    kernel_overhead_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    not_identified: dict[str, str] = Field(default_factory=dict)


class BusRow(_Strict):
    op: str
    bytes: float = Field(gt=0, allow_inf_nan=False)
    group_size: int = Field(ge=1)
    level: Literal["intra", "inter"]
    calls: int = Field(ge=1)
    seconds: float = Field(gt=0, allow_inf_nan=False)
    busbw_GBps: float = Field(ge=0, allow_inf_nan=False)
    bytes_source: str


class NetworkSection(_Strict):
    ranks: int = Field(default=1, ge=1)  # ranks' traces aligned (1: times include peer waits)
    intra_efficiency: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    bus_bandwidth: list[BusRow] = Field(default_factory=list)
    measurements: list[Measurement] = Field(default_factory=list)
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
    world_size: int | None = Field(default=None, ge=1)
    gpus_per_node: int = Field(ge=1)
    nccl_version: str | None = None
    step_time_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    exposed_communication_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    overlap_fraction: float | None = Field(default=None, allow_inf_nan=False)
    compute: ComputeSection = Field(default_factory=ComputeSection)
    network: NetworkSection = Field(default_factory=NetworkSection)


def calibration_to_yaml(calibration: Calibration) -> str:
    return yaml.safe_dump(calibration.model_dump(mode="json"), sort_keys=False)


def calibration_from_yaml(text: str, origin: str = "<text>") -> Calibration:
    """A calibration from YAML text; errors name ``origin`` and the field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CalibrationError(f"{origin}: not valid YAML ({exc})".replace("\n", " ")) from None
    except RecursionError:
        raise CalibrationError(f"{origin}: YAML nested too deeply") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise CalibrationError(
            f"{origin}: not a calibration file (it needs 'kind: {KIND}'; "
            "commatlas import-trace --out writes one)"
        )
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise CalibrationError(f"{origin}: {where}: {err['msg']}{more}") from None


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
