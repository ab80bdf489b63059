"""The cluster profile's schema: LinkFit, Measurement, ClusterProfile and the alpha-beta forms.

``coefficients`` gives the steps s and bytes v of each collective that LinkFit prices with. The
model and the forms s and v are described in costmodels.calibration.profile (the module
most callers import these names from); the fit is costmodels.calibration.profile_fit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from costmodels.limits import MAX_BYTES, MAX_CALL_S, MAX_MEASUREMENTS, MAX_RATE_BPS, MIN_CALL_S

Level = Literal["intra", "inter"]
COLLECTIVES = (
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send-recv",
)  # fmt: skip
# collective -> (cost-model id, variant) whose alpha and beta coefficients give s and v.
FORMS: dict[str, tuple[str, str]] = {
    "all-reduce": ("ring-allreduce", "ring"),
    "all-gather": ("allgather", "ring"),
    "reduce-scatter": ("reduce-scatter", "ring"),
    "all-to-all": ("alltoall", "pairwise"),
}


class ProfileError(ValueError):
    """A profile file or text that cannot be read; the message names the file and the field."""


def canonical_collective(name: str) -> str:
    """'all_reduce', 'AllReduce', 'allreduce', 'all_reduce_perf' -> 'all-reduce'."""
    if not isinstance(name, str):
        raise TypeError(f"collective must be a str, got {type(name).__name__}")
    plain = name.lower().removesuffix("_perf").replace("_", "").replace("-", "").strip()
    for known in COLLECTIVES:
        if known.replace("-", "") == plain:
            return known
    raise ValueError(f"unknown collective {name!r}; choose from {list(COLLECTIVES)}")


def coefficients(collective: str, p: object, n: object) -> tuple[np.ndarray, np.ndarray]:
    """(s, v): the alpha coefficient (steps) and the beta coefficient (bytes) of ``collective``."""
    collective = canonical_collective(collective)
    ranks = np.asarray(p, dtype=float)
    size = np.asarray(n, dtype=float)
    if np.any(ranks < 1) or np.any(size < 0):
        raise ValueError("coefficients: p must be >= 1 and n >= 0")
    if collective in FORMS:
        from costmodels.registry import get  # sympy: only when a ring form is evaluated

        model_id, variant = FORMS[collective]
        model = get(model_id)
        steps = model.evaluate(variant, p=ranks, n=size, alpha=1.0, beta=0.0, gamma=0.0)
        volume = model.evaluate(variant, p=ranks, n=size, alpha=0.0, beta=1.0, gamma=0.0)
        return np.asarray(steps, dtype=float), np.asarray(volume, dtype=float)
    shape = np.broadcast_shapes(ranks.shape, size.shape)
    if collective == "send-recv":
        return np.ones(shape), np.broadcast_to(size, shape).astype(float)
    # broadcast and reduce: the pipelined chain of costmodels.calibration.profile's docstring.
    return np.broadcast_to(ranks - 1, shape).astype(float), np.broadcast_to(size, shape) * 1.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkFit(_Strict):
    """Alpha-beta parameters of one level (or one collective on one level) and how well they fit."""

    alpha_s: float = Field(ge=0, allow_inf_nan=False)  # per step
    bandwidth_Bps: float = Field(gt=0, allow_inf_nan=False)  # 1 / beta, comparable with busbw
    gamma_s_per_byte: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    points: int = Field(default=0, ge=0)  # measurements behind the fit (0: entered by hand)
    collective: str | None = None  # what it was fitted on
    world_size: int | None = Field(default=None, ge=1)
    ranks_per_node: int | None = Field(default=None, ge=1)
    derived_from: str | None = None  # how a level was derived from a collective's fit
    median_abs_rel_error: float | None = Field(default=None, ge=0)
    max_abs_rel_error: float | None = Field(default=None, ge=0)

    @field_validator("collective")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        return None if value is None else canonical_collective(value)

    @property
    def beta_s_per_byte(self) -> float:
        return 1.0 / self.bandwidth_Bps

    def time(self, collective: str, p: object, n: object) -> np.ndarray:
        """Predicted seconds of ``collective`` on p ranks and n bytes (numpy broadcasting)."""
        steps, volume = coefficients(collective, p, n)
        return steps * self.alpha_s + volume / self.bandwidth_Bps


class Measurement(_Strict):
    """One measured collective: n bytes (the cost models' n) on world_size ranks took seconds."""

    collective: str
    level: Level | None = None
    world_size: int = Field(ge=1)
    ranks_per_node: int | None = Field(default=None, ge=1)  # from the log's hosts, when known
    bytes: float = Field(ge=0, le=MAX_BYTES, allow_inf_nan=False)
    # one call: 10 ns to an hour, at most 1 PB/s (costmodels.limits: what no network produces)
    seconds: float = Field(ge=MIN_CALL_S, le=MAX_CALL_S, allow_inf_nan=False)
    busbw_Bps: float | None = Field(default=None, ge=0, le=MAX_RATE_BPS, allow_inf_nan=False)

    @field_validator("collective")
    @classmethod
    def _known(cls, value: str) -> str:
        return canonical_collective(value)

    @model_validator(mode="after")
    def _physical(self) -> Measurement:
        if self.bytes / self.seconds > MAX_RATE_BPS:
            raise ValueError(
                f"{self.bytes:.4g} bytes in {self.seconds:.4g} s is faster than "
                f"{MAX_RATE_BPS:.0e} B/s, more than any network moves"
            )
        return self


class ClusterProfile(_Strict):
    """Fitted parameters of one cluster, with the measurements they came from."""

    name: str = Field(min_length=1)
    source: str  # what produced it: "nccl-tests", "commatlas calibrate", a file name ...
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    levels: dict[Level, LinkFit] = Field(default_factory=dict)
    collectives: dict[str, dict[Level | Literal["unknown"], LinkFit]] = Field(default_factory=dict)
    measurements: list[Measurement] = Field(default_factory=list, max_length=MAX_MEASUREMENTS)

    @field_validator("collectives")
    @classmethod
    def _known_collectives(cls, value: dict) -> dict:
        for name in value:
            if name != canonical_collective(name):
                raise ValueError(
                    f"collective {name!r} must be written {canonical_collective(name)!r}"
                )
        return value
