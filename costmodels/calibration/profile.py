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

This module reads and writes the YAML file (``load_profile``, ``save_profile``); the schema
(LinkFit, Measurement, ClusterProfile, ``coefficients``) is costmodels/calibration/profile_schema.py
and the fit costmodels/calibration/profile_fit.py, all importable from here.

Example::

    >>> fit = LinkFit(alpha_s=2e-6, bandwidth_Bps=100e9)  # ms below: 14 alpha + 1.75 GB / 100 GB/s
    >>> round(float(fit.time("all-reduce", p=8, n=1e9)) * 1e3, 6)
    17.528
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from costmodels.calibration.profile_fit import (
    fit_alpha_beta,
    parse_nccl_tests,
    per_gpu,
    profile_from_measurements,
)
from costmodels.calibration.profile_schema import (
    COLLECTIVES,
    FORMS,
    ClusterProfile,
    Level,
    LinkFit,
    Measurement,
    ProfileError,
    canonical_collective,
    coefficients,
)
from costmodels.limits import MAX_PROFILE_BYTES, InputFileError, read_text_bounded
from costmodels.safe_output import OutputTarget, write_output
from costmodels.yaml_bounded import dump_yaml, safe_load_bounded

__all__ = [  # the schema and the fit are re-exported: callers import them from here
    "COLLECTIVES", "FORMS", "ClusterProfile", "Level", "LinkFit", "Measurement", "ProfileError",
    "canonical_collective", "coefficients", "fit_alpha_beta", "load_profile", "parse_nccl_tests",
    "per_gpu", "profile_from_measurements", "profile_from_yaml", "profile_to_yaml",
    "save_profile",
]  # fmt: skip


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
