"""The Calibrate page's pure part: read pasted or uploaded text into a ClusterProfile, tabulate it.

Text is either nccl-tests output (parsed and fitted by costmodels.calibration.profile) or a profile
YAML
(written by this page's download button or ``commatlas calibrate``); :func:`read_source` tells
them apart by content, so one text box and one uploader take both.

>>> profile = read_source("name: lab\\nsource: hand\\nlevels: {inter: {alpha_s: 0, "
...                       "bandwidth_Bps: 1e10}}\\n", "typed", None, None, "x")
>>> profile.levels["inter"].bandwidth_Bps
10000000000.0
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from costmodels.calibration.nccl_tests import UnnamedCollectiveError
from costmodels.calibration.profile import (
    ClusterProfile,
    LinkFit,
    coefficients,
    parse_nccl_tests,
    per_gpu,
    profile_from_measurements,
    profile_from_yaml,
)
from costmodels.hardware import LINKS
from costmodels.limits import MAX_UPLOAD_BYTES
from costmodels.yaml_bounded import safe_load_bounded

MAX_TEXT = MAX_UPLOAD_BYTES  # characters: a full nccl-tests sweep is ~5 kB; more is not a log
PROFILE_KEYS = {"levels", "collectives", "measurements", "source"}


def _is_profile_yaml(text: str, origin: str) -> bool:
    try:  # bounded: nesting and value count (costmodels/yaml_bounded.py), never a RecursionError
        data = safe_load_bounded(text, origin)
    except ValueError as exc:
        if "1,000 levels" in str(exc) or "YAML values" in str(exc):
            raise  # no log nests 1,000 deep: the profile's own error
        return False  # nccl-tests logs are rarely valid YAML; they are read below
    return isinstance(data, dict) and bool(PROFILE_KEYS & {str(key) for key in data})


@st.cache_data(max_entries=32, show_spinner=False)
def read_source(
    text: str, origin: str, collective: str | None, level: str | None, name: str
) -> ClusterProfile:
    """A profile from ``text``: a profile YAML as written, or nccl-tests output fitted.

    Raises ValueError (ProfileError, NcclTestsFormatError) with a message naming ``origin``.
    """
    if len(text) > MAX_TEXT:
        raise ValueError(f"{origin}: {len(text):,} characters is more than an nccl-tests log")
    if not text.strip():
        raise ValueError(f"{origin}: empty")
    if _is_profile_yaml(text, origin):
        return profile_from_yaml(text, origin)
    try:
        measurements = parse_nccl_tests(text, collective, level)  # type: ignore[arg-type]
        return profile_from_measurements(measurements, name, f"nccl-tests ({origin})")
    except UnnamedCollectiveError as exc:
        hint = str(exc).replace("; choose it", "; choose it under 'Collective' in the sidebar")
        raise ValueError(f"{origin}: {hint}") from None
    except ValueError as exc:  # a mixed log: the sidebar's menu, not a flag, sets the collective
        message = str(exc).replace("leave the collective unset", "choose 'auto-detect' under "
                                   "'Collective' in the sidebar")  # fmt: skip
        raise ValueError(f"{origin}: {message}") from None


def points_table(profile: ClusterProfile) -> pd.DataFrame:
    """The measurements, in the units people read nccl-tests in."""
    return pd.DataFrame(
        {
            "collective": [m.collective for m in profile.measurements],
            "level": [m.level or "unknown" for m in profile.measurements],
            "ranks": [m.world_size for m in profile.measurements],
            "bytes": [m.bytes for m in profile.measurements],
            "time (us)": [m.seconds * 1e6 for m in profile.measurements],
            "busbw (GB/s)": [
                None if m.busbw_Bps is None else m.busbw_Bps / 1e9 for m in profile.measurements
            ],
        }
    )


def _nominal(level: str, nominal: dict[str, str]) -> float | None:
    link = LINKS.get(nominal.get(level, ""))
    return None if link is None else link.bandwidth_Bps


EXPECTED_SIZE = 8 * 2**30  # bytes: the largest size nccl-tests sweeps by default (8 GiB)


def nccl_on_nominal_Bps(fit: LinkFit, nominal: dict[str, str]) -> float | None:
    """The bus bandwidth NCCL would reach for a multi-node fit's collective and ranks on the
    nominal links at their full nominal rate, one NIC per GPU (costmodels.nccl at 8 GiB): what
    such a log can show at most. A two-node all-reduce's bus bandwidth exceeds ranks per node x
    the NIC rate (NCCL's tree keeps half the traffic on NVLink), so B / ranks per node is no
    bound on its own (issue 30: the page's own two-node example warned at 118 % of HDR)."""
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.nccl.tuner import collective_time

    g, p = fit.ranks_per_node, fit.world_size
    intra, inter = LINKS.get(nominal.get("intra", "")), LINKS.get(nominal.get("inter", ""))
    if not (fit.collective and g and p and p % g == 0 and p > g and intra and inter):
        return None
    try:
        system = system_from_cluster(
            gpus_per_node=g, nodes=p // g, intra_bandwidth_Bps=intra.bandwidth_Bps,
            nic_bandwidth_Bps=inter.bandwidth_Bps, nics_per_node=g,
        )  # fmt: skip
        return float(collective_time(fit.collective, [EXPECTED_SIZE], system).busbw_Bps[0])
    except ValueError:  # a collective the NCCL model does not price (send-recv ...)
        return None


def fits_table(profile: ClusterProfile, nominal: dict[str, str]) -> pd.DataFrame:
    """One row per fitted (collective, level): the fit (B comparable with busbw), one GPU's
    link rate derived from it (``costmodels.calibration.profile.per_gpu``) and the nominal rate it
    compares
    to."""
    rows = []
    entries = [
        (c, lvl, fit, True) for c, by in profile.collectives.items() for lvl, fit in by.items()
    ]
    if not entries:  # a hand-written profile may hold levels only, already per GPU
        entries = [(f.collective or "(given)", lvl, f, False) for lvl, f in profile.levels.items()]
    for collective, level, fit, derive in entries:
        rate = _nominal(level, nominal)
        # one GPU's link: the bus bandwidth itself inside a node, a share of it across nodes
        link = per_gpu(fit) if derive and level == "inter" else fit
        error = fit.median_abs_rel_error
        expected = nccl_on_nominal_Bps(fit, nominal) if derive and level == "inter" else None
        rows.append(
            {
                "collective": collective,
                "level": level,
                "ranks": fit.world_size,
                "points": fit.points,
                "alpha (us)": fit.alpha_s * 1e6,
                "bandwidth (GB/s)": fit.bandwidth_Bps / 1e9,
                "median |error| (%)": None if error is None else 100 * error,
                "per-GPU link (GB/s)": link.bandwidth_Bps / 1e9,
                "nominal (GB/s)": None if rate is None else rate / 1e9,
                "per-GPU / nominal (%)": None if rate is None else 100 * link.bandwidth_Bps / rate,
                "NCCL on nominal (GB/s)": None if expected is None else expected / 1e9,
                "B / NCCL on nominal (%)": None
                if expected is None
                else 100 * fit.bandwidth_Bps / expected,
            }
        )
        rows[-1]["of nominal (%)"] = (  # the comparison the warning uses (page calibrate)
            rows[-1]["B / NCCL on nominal (%)"]
            if expected is not None
            else rows[-1]["per-GPU / nominal (%)"]
        )
    return pd.DataFrame(rows)


def fitted_curves(profile: ClusterProfile) -> pd.DataFrame:
    """Measured and fitted time of every non-zero measurement, and their relative difference."""
    rows = []
    for m in profile.measurements:
        fit = profile.collectives.get(m.collective, {}).get(m.level or "unknown")
        if fit is None or m.bytes <= 0:
            continue
        predicted = float(fit.time(m.collective, m.world_size, m.bytes))
        rows.append(
            {
                "series": f"{m.collective} ({m.level or 'unknown'}, {m.world_size} ranks)",
                "bytes": m.bytes,
                "measured_us": m.seconds * 1e6,
                "fitted_us": predicted * 1e6,
                "residual_pct": 100 * (m.seconds / predicted - 1),
            }
        )
    return pd.DataFrame(rows)


def fit_latex(fit: LinkFit) -> str:
    """'t(n) = 14 x 2.59 us + 1.75 n / 235 GB/s' for the fit's collective and rank count."""
    alpha_us, gbps = fit.alpha_s * 1e6, fit.bandwidth_Bps / 1e9
    if fit.world_size is None or fit.collective is None:
        return rf"t = s\,\alpha + v / B,\quad \alpha = {alpha_us:.3g}\,\mu s,\ B = {gbps:.4g}\,GB/s"
    steps, volume = coefficients(fit.collective, fit.world_size, 1.0)
    return (
        rf"t(n) = {float(steps):g} \times {alpha_us:.3g}\,\mu s + "
        rf"\frac{{{float(volume):.4g}\, n}}{{{gbps:.4g}\,\mathrm{{GB/s}}}}"
    )


@st.cache_data(max_entries=32, show_spinner=False)
def log_notes(text: str, collective: str | None) -> list[str]:
    """What the page did with an nccl-tests log: per run, how its collective was decided (its
    binary named, read from the table, or as chosen), and the zero-byte rows left out."""
    from costmodels.calibration.nccl_detect import candidates
    from costmodels.calibration.nccl_tests import parse_runs, zero_byte_rows

    if _is_profile_yaml(text, "text"):
        return []
    notes = []
    for number, run in enumerate(parse_runs(text), start=1):
        found, why = candidates(run)
        if run.collective:
            how = f"{run.collective}, named in the log"
        elif collective:
            how = f"{collective}, as chosen" + (f" (the table agrees: {why})" if found else "")
        else:
            how = f"{found[0]}, read from the table ({why})"
        notes.append(f"Run {number} (line {run.line}): {how}.")
    zero = zero_byte_rows(text)
    if zero:
        notes.append(f"{zero} zero-byte row{'s' if zero > 1 else ''} left out: NCCL returns "
                     "before communicating, so they time a kernel launch, not a "
                     "transfer.")  # fmt: skip
    return notes
