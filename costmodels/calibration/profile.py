"""A cluster profile: alpha-beta parameters fitted to measured collective times, saved as YAML.

The calculator's Calibrate page (and ``commatlas calibrate``) turn measurements into a
:class:`ClusterProfile`; the other pages then price communication with its ``levels`` ("intra":
inside a node, "inter": across nodes) instead of nominal link data.

Model (Hockney's alpha-beta, in the notation of R. Thakur, R. Rabenseifner and W. Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 19(1), 2005): one
collective of n bytes on p ranks takes

    t = s(p) alpha + v(p, n) / B

with s the number of sequential steps and v the bytes one rank sends in series. s and v are not
retyped here: they are read off the project's cost model of the algorithm NCCL runs (the
coefficient of alpha and of beta in ``costmodels.get(id).expr``), see ``FORMS``:

    all-reduce      ring-allreduce/ring     s = 2(p-1), v = 2(p-1)/p n
    all-gather      allgather/ring          s = p-1,    v = (p-1)/p n
    reduce-scatter  reduce-scatter/ring     s = p-1,    v = (p-1)/p n
    all-to-all      alltoall/pairwise       s = p-1,    v = (p-1)/p n
    broadcast, reduce: NCCL pipelines the message along a ring (chain); no project cost model
                    describes that schedule, so s = p-1 hops to fill the pipe and v = n
    send-recv       one message: s = 1, v = n

v / n is then exactly nccl-tests' bus-bandwidth factor, so a fitted B is comparable with the
``busbw`` column. Like busbw, B describes the job as a flat ring of p ranks: for a multi-node
run it folds in every NIC of a node, NVLink inside it and NCCL's ring/tree choice, so it is
the per-rank rate of that equivalent ring (often several NICs' worth), not one link's. The
reduction term (gamma) is not fitted: for every ring form it is proportional to n like the beta
term, so the data cannot tell the two apart; B absorbs it.

Fit (``fit_alpha_beta``; numerics in costmodels/calibration/robust_fit.py): Huber M-estimation by
iteratively reweighted least squares (P. J. Huber, "Robust estimation of a location
parameter", Ann. Math. Statist. 35(1), 1964; tuning constant 1.345, scale = 1.4826 x median
absolute deviation), in two steps, each parameter where the data identify it:

1. B jointly with alpha on residuals in seconds, which the large messages dominate;
2. alpha with that B fixed, on residuals relative to each measured time, which weigh every size
   alike, so the many small messages (where t ~ s alpha) decide it.

The sizes where NCCL switches protocol (LL / LL128 / Simple), which no two-parameter model
follows, get bounded influence in both steps. Being fitted in seconds, B is the bandwidth of
the largest messages (as nccl-tests' busbw at its largest sizes): a straggling largest size moves
it, so sweep to a few GiB with enough iterations. ``median_abs_rel_error`` says how well it fits.

Example::

    >>> fit = LinkFit(alpha_s=2e-6, bandwidth_Bps=100e9)  # ms below: 14 alpha + 1.75 GB / 100 GB/s
    >>> round(float(fit.time("all-reduce", p=8, n=1e9)) * 1e3, 6)
    17.528
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from costmodels.calibration.nccl_tests import measurement_fields
from costmodels.calibration.robust_fit import check_identified, huber_irls
from costmodels.limits import (
    MAX_BYTES,
    MAX_CALL_S,
    MAX_MEASUREMENTS,
    MAX_PROFILE_BYTES,
    MAX_RATE_BPS,
    MIN_CALL_S,
    InputFileError,
    read_text_bounded,
)
from costmodels.safe_output import OutputTarget, write_output
from costmodels.yaml_bounded import dump_yaml, safe_load_bounded

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
    # broadcast and reduce: the pipelined chain of the module docstring.
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


def fit_alpha_beta(
    measurements: Iterable[Measurement], collective: str, level: Level | None = None,
    ceiling_Bps: float | None = None,
) -> LinkFit:  # fmt: skip
    """Fit alpha and B to the measurements of ``collective`` (and ``level``, when given).

    Zero-byte rows are left out (NCCL returns before communicating, so they time a kernel
    launch, not a step). Raises ValueError with fewer than two distinct sizes or when the times
    do not grow with the size (no positive bandwidth fits). ``ceiling_Bps`` (the link's nominal
    rate, when known): a fitted B above it is not physical, so B is set to it, alpha refitted,
    and ``derived_from`` says so.
    """
    name = canonical_collective(collective)
    chosen = [
        m for m in measurements
        if m.collective == name and m.bytes > 0 and (level is None or m.level == level)
    ]  # fmt: skip
    if len({m.bytes for m in chosen}) < 2:
        raise ValueError(
            f"fit_alpha_beta: need measurements of {name}"
            f"{f' ({level})' if level else ''} at two or more non-zero sizes, got {len(chosen)}"
        )
    p = np.array([m.world_size for m in chosen], dtype=float)
    n = np.array([m.bytes for m in chosen])
    seconds = np.array([m.seconds for m in chosen])
    steps, volume = coefficients(name, p, n)
    if not np.any(volume > 0):
        raise ValueError(f"fit_alpha_beta: {name} on one rank sends nothing; no bandwidth to fit")
    check_identified(name, volume, seconds)
    # 1. beta jointly with alpha, residuals in seconds: the large sizes decide it.
    alpha, beta = huber_irls(np.column_stack([steps, volume]), seconds)
    if alpha < 0:  # a negative latency is no latency: refit beta alone
        (beta,) = huber_irls(volume[:, None], seconds)
    if not beta > 0:
        raise ValueError(
            f"fit_alpha_beta: the {name} times do not grow with the message size (the fitted "
            "bandwidth is not positive); no bandwidth can be fitted"
        )
    bounded = None
    if ceiling_Bps is not None and 1.0 / beta > ceiling_Bps:
        bounded = (f"bounded: the fit gave {1e-9 / beta:.4g} GB/s, above the nominal "
                   f"{ceiling_Bps / 1e9:.4g} GB/s")  # fmt: skip
        beta = 1.0 / ceiling_Bps
    # 2. alpha with beta fixed, residuals relative to each time: the small sizes decide it.
    alpha = 0.0
    if np.any(steps > 0):
        (alpha,) = huber_irls((steps / seconds)[:, None], 1.0 - volume * beta / seconds)
        alpha = max(float(alpha), 0.0)
    relative = np.abs((steps * alpha + volume * beta - seconds) / seconds)
    sizes = {m.world_size for m in chosen}
    per_node = {m.ranks_per_node for m in chosen}
    return LinkFit(
        alpha_s=float(alpha),
        bandwidth_Bps=float(1.0 / beta),
        points=len(chosen),
        collective=name,
        world_size=sizes.pop() if len(sizes) == 1 else None,
        ranks_per_node=per_node.pop() if len(per_node) == 1 else None,
        median_abs_rel_error=float(np.median(relative)),
        max_abs_rel_error=float(np.max(relative)),
        derived_from=bounded,
    )


def parse_nccl_tests(
    text: str, collective: str | None = None, level: Level | None = None
) -> list[Measurement]:
    """Measurements from nccl-tests output (format and overrides:
    costmodels/calibration/nccl_tests.py)."""
    wanted = canonical_collective(collective) if collective else None
    return [Measurement(**fields) for fields in measurement_fields(text, wanted, level)]


def per_gpu(fit: LinkFit) -> LinkFit:
    """An inter-node fit as one GPU's share of the network: B / ranks per node.

    A multi-node fit's B is the bus bandwidth of the whole job (module docstring): every GPU of
    a node drives its share of the node's NICs, so one GPU's link, the unit of the link presets
    and of the other pages, carries B / g (g ranks per node). Alpha stays per step.
    """
    g = fit.ranks_per_node
    if not g or g == 1 or (fit.derived_from or "").endswith("ranks per node"):
        return fit  # one rank per node, unknown, or already one GPU's share
    bus = fit.bandwidth_Bps / 1e9
    note = f"{fit.collective} fit: bus bandwidth {bus:.4g} GB/s / {g} ranks per node"
    if fit.derived_from:  # e.g. bounded by the nominal rate
        note = f"{fit.derived_from}; {note}"
    return fit.model_copy(update={"bandwidth_Bps": fit.bandwidth_Bps / g, "derived_from": note})


def profile_from_measurements(
    measurements: Sequence[Measurement], name: str, source: str,
    ceilings: dict[str, float] | None = None,
) -> ClusterProfile:  # fmt: skip
    """Fit every (collective, level) present; each level takes its all-reduce fit when there is
    one (what the calculator prices most), else the fit with the most points; the inter level
    as one GPU's share (:func:`per_gpu`). ``ceilings``: nominal bus bandwidth per level, when
    known (fit_alpha_beta's ``ceiling_Bps``)."""
    if len(measurements) > MAX_MEASUREMENTS:
        raise ValueError(
            f"{len(measurements):,} measurements; a profile holds at most {MAX_MEASUREMENTS:,} "
            "(an nccl-tests sweep is ~30 sizes: give the sweeps of one job, not many runs' logs)"
        )
    fits: dict[str, dict[str, LinkFit]] = {}
    for collective, level in sorted({(m.collective, m.level or "unknown") for m in measurements}):
        wanted = None if level == "unknown" else level
        subset = [m for m in measurements if (m.level or "unknown") == level]
        ceiling = (ceilings or {}).get(level)
        fits.setdefault(collective, {})[level] = fit_alpha_beta(subset, collective, wanted,
                                                                ceiling)  # fmt: skip
    levels: dict[str, LinkFit] = {}
    for level in ("intra", "inter"):
        candidates = {c: f[level] for c, f in fits.items() if level in f}
        if candidates:
            best = candidates.get("all-reduce") or max(candidates.values(), key=lambda f: f.points)
            levels[level] = best if level == "intra" else per_gpu(best)
    return ClusterProfile(
        name=name, source=source, levels=levels, collectives=fits, measurements=list(measurements)
    )


def _field_errors(exc: ValidationError) -> str:
    parts = [
        f"{'.'.join(str(x) for x in err['loc']) or '(top level)'}: {err['msg']}"
        for err in exc.errors()[:3]
    ]
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def profile_from_yaml(text: str, origin: str = "<text>") -> ClusterProfile:
    """A profile from YAML text; ``origin`` (a file name) prefixes every error message."""
    try:  # bounded: at most MAX_NODES values, 1,000 levels deep (costmodels/yaml_bounded.py)
        data = safe_load_bounded(text, origin)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    if not isinstance(data, dict):
        raise ProfileError(f"{origin}: expected a mapping with name, source, levels ...")
    try:
        return ClusterProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(f"{origin}: {_field_errors(exc)}") from None


def profile_to_yaml(profile: ClusterProfile) -> str:
    # measurements one per line: PyYAML's representer took 16 s for 13k of them
    return dump_yaml(profile.model_dump(mode="json"), flat_lists=("measurements",))


def load_profile(path: str | Path, what: str = "--profile") -> ClusterProfile:
    """Read a profile YAML file of at most MAX_PROFILE_BYTES (ProfileError naming the file and
    the field when it is bad; a FIFO, a device or a huge file is refused by the bounded reader,
    costmodels.limits.read_text_bounded)."""
    try:
        text = read_text_bounded(path, what, MAX_PROFILE_BYTES)
    except InputFileError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.reason})") from None
    return profile_from_yaml(text, str(path))


def save_profile(profile: ClusterProfile, path: str | Path | OutputTarget) -> Path:
    """Write ``profile`` as YAML (load_profile reads it back equal) where ``path`` says: a file
    name, or the :class:`OutputTarget` a command checked before its work (``-`` is standard
    output; costmodels/safe_output.py)."""
    if not isinstance(profile, ClusterProfile):
        raise TypeError(f"profile must be a ClusterProfile, got {type(profile).__name__}")
    return write_output(path, profile_to_yaml(profile), "profile").path
