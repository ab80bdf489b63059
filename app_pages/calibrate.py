"""Page: calibrate the network from measurements, so the other pages price the user's cluster.

Input: nccl-tests output (pasted, or its file uploaded) or a profile YAML (from this page or
``commatlas calibrate``). nccl-tests rows are fitted to the alpha-beta form of the collective
NCCL runs (costmodels/calibration/profile.py: t = s(p) alpha + v(p, n) / B, with s and v the
coefficients of
the project's cost model; Huber regression). Shows the points, the fitted alpha and bandwidth
per collective and level with their formula, measured vs fitted time (log-log) with the
relative residuals, and the fitted bandwidth against the nominal rate of a chosen link, with a
warning when a fit exceeds that rate (the log then measured more than the link: check the
level and the link chosen). Two shipped nccl-tests logs (tests/costmodels/data/nccl_tests, see
SOURCES.md there) can be loaded as examples. "Use this profile" stores it in
``st.session_state["cluster_profile"]``, where the Compare, Collectives, Compression and LLM
planner pages offer it as the link "Calibrated: <name>".

URL keys: ``coll`` (collective, when the log does not name its binary), ``level``, ``pname``,
``cal_intra`` and ``cal_inter`` (nominal links). The pasted text itself stays out of the URL.
"""

from __future__ import annotations

import re

import altair as alt
import pandas as pd
import streamlit as st

from app_pages.calibrate_compute import (
    fit_latex,
    fits_table,
    fitted_curves,
    log_notes,
    points_table,
    read_source,
)
from app_pages.markdown_text import escape_markdown
from app_pages.query_inputs import Field, choice, seed, show_problems, text, write_back
from app_pages.tables import show_table
from costmodels.calibration.profile import COLLECTIVES, ClusterProfile, profile_to_yaml
from costmodels.formatting import format_number
from costmodels.hardware import LINKS
from costmodels.limits import MAX_UPLOAD_BYTES

AUTO = "auto-detect"
TIMES_HEIGHT, RESIDUAL_HEIGHT = 360, 220  # pixels, axes included
PROFILE_KEY = "cluster_profile"
# label -> (shipped nccl-tests log, the collective it measured: superbench logs do not say)
EXAMPLES = {
    "one node, 8 x A100 all-reduce": ("superbench_8xa100_allreduce.txt", "all-reduce"),
    "two nodes x 8 A100 all-reduce": ("oke_2x8xa100_allreduce.txt", "all-reduce"),
}
FIT_TABLE = {"collective": "collective", "level": "level", "alpha (us)": "alpha (us)",
             "bandwidth (GB/s)": "bandwidth (GB/s)", "per-GPU link (GB/s)": "per-GPU link (GB/s)",
             "of nominal (%)": "of nominal (%)"}  # fmt: skip
FIT_MORE = {"ranks": "ranks", "points": "points", "median |error| (%)": "median |error| (%)",
            "nominal (GB/s)": "nominal (GB/s)", "per-GPU / nominal (%)": "per-GPU / nominal (%)",
            "NCCL on nominal (GB/s)": "NCCL on nominal (GB/s)",
            "B / NCCL on nominal (%)": "B / NCCL on nominal (%)"}  # fmt: skip
FIELDS = [
    Field("coll", AUTO, choice([AUTO, *COLLECTIVES])),
    Field("level", AUTO, choice([AUTO, "intra", "inter"])),
    Field("pname", "my cluster", text(60)),
    Field("cal_intra", "NVLink 3 (A100)", choice(list(LINKS))),
    Field("cal_inter", "InfiniBand HDR", choice(list(LINKS))),
]


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.header("Reading the log")
    bar.selectbox(
        "Collective", [AUTO, *COLLECTIVES], key="coll",
        help="what the log measured; auto-detect reads the '..._perf' name in the text",
    )  # fmt: skip
    bar.selectbox(
        "Level", [AUTO, "intra", "inter"], key="level",
        help="auto: inter when the ranks sit on two or more hosts, else intra",
    )  # fmt: skip
    bar.text_input("Profile name", key="pname")
    bar.header("Compare with")
    bar.selectbox("Nominal intra-node link", list(LINKS), key="cal_intra")
    bar.selectbox("Nominal inter-node link", list(LINKS), key="cal_inter")
    return problems


def _load_example(label: str) -> None:
    """Button callback: put a shipped log in the text box and name its collective."""
    from costmodels.calibration.nccl_shipped_logs import LOG_DIR

    file, collective = EXAMPLES[label]
    st.session_state["cal_text"] = (LOG_DIR / file).read_text(encoding="utf-8")
    st.session_state["coll"] = collective


def source_text() -> tuple[str, str] | None:
    """(text, origin) from the uploader, else the text box; None when both are empty."""
    columns = st.columns(len(EXAMPLES) + 1)
    columns[0].markdown("Try an example log:")
    for column, label in zip(columns[1:], EXAMPLES, strict=True):
        column.button(label, key=f"example_{EXAMPLES[label][0]}", on_click=_load_example,
                      args=(label,))  # fmt: skip
    upload = st.file_uploader(
        "Upload nccl-tests output or a profile YAML",
        type=["txt", "log", "out", "yaml", "yml"], key="cal_file",
    )  # fmt: skip
    st.text_area(
        "... or paste nccl-tests output (or a profile YAML) here", key="cal_text", height=180,
        max_chars=MAX_UPLOAD_BYTES,
        placeholder="# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 ...",
    )  # fmt: skip
    if upload is not None:
        if upload.size > MAX_UPLOAD_BYTES:  # checked before the bytes are decoded
            raise ValueError(
                f"{upload.name}: {upload.size:,} bytes; at most {MAX_UPLOAD_BYTES:,} are read "
                "(an nccl-tests log is a few kilobytes)"
            )
        try:
            return upload.getvalue().decode("utf-8"), upload.name
        except UnicodeDecodeError:
            raise ValueError(f"{upload.name}: not a text file (UTF-8 expected)") from None
    pasted = st.session_state.get("cal_text", "")
    return (pasted, "pasted text") if pasted.strip() else None


def measured_vs_fitted(curves: pd.DataFrame) -> tuple[alt.LayerChart, alt.LayerChart]:
    """Log-log measured points with the fitted lines, and the relative residuals."""
    x = alt.X("bytes:Q", scale=alt.Scale(type="log"), title="message size n (bytes)")
    legend = alt.Legend(orient="bottom", labelLimit=0)
    base = alt.Chart(curves).encode(x=x, color=alt.Color("series:N", title="", legend=legend))
    points = base.mark_circle(size=45).encode(
        y=alt.Y("measured_us:Q", scale=alt.Scale(type="log"), title="time (us)"),
        tooltip=["series", "bytes", alt.Tooltip("measured_us:Q", format=".4g"),
                 alt.Tooltip("fitted_us:Q", format=".4g")],
    )  # fmt: skip
    lines = base.mark_line().encode(y="fitted_us:Q")
    # The residuals share the colours above, so no second legend; Streamlit sizes a layered
    # chart by the height it is given (main() passes RESIDUAL_HEIGHT), not by the spec's.
    residual = base.mark_circle(size=35).encode(
        color=alt.Color("series:N", legend=None),
        y=alt.Y(
            "residual_pct:Q",
            title="measured / fitted - 1 (%)",
            axis=alt.Axis(
                tickCount=5, format=",.0f", grid=True, labels=True, ticks=True, labelOverlap=True
            ),
        ),
        tooltip=["series", "bytes", alt.Tooltip("residual_pct:Q", format=".1f")],
    )
    zero = alt.Chart(pd.DataFrame({"y": [0]})).mark_rule(strokeDash=[4, 4]).encode(y="y:Q")
    return alt.layer(points, lines), alt.layer(residual, zero)


def against_nominal(fits: pd.DataFrame) -> alt.Chart:
    """Fitted bandwidth beside what the chosen links allow, per fitted row: one GPU's link
    against the nominal rate inside a node; across nodes the bus bandwidth against NCCL's on
    the nominal links (fits_table's "NCCL on nominal")."""
    rows = fits.dropna(subset=["nominal (GB/s)"])
    multi = rows["NCCL on nominal (GB/s)"].notna() if "NCCL on nominal (GB/s)" in rows else None
    fitted = [r["bandwidth (GB/s)"] if multi is not None and multi[i] else r["per-GPU link (GB/s)"]
              for i, r in rows.iterrows()]  # fmt: skip
    allowed = [r["NCCL on nominal (GB/s)"] if multi is not None and multi[i]
               else r["nominal (GB/s)"] for i, r in rows.iterrows()]  # fmt: skip
    long = pd.DataFrame(
        {
            "fit": [f"{r.collective} ({r.level})" for r in rows.itertuples()] * 2,
            "kind": ["fitted"] * len(rows) + ["nominal links allow"] * len(rows),
            "GB/s": [*fitted, *allowed],
        }
    )
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("fit:N", title=None),
            yOffset="kind:N",
            x=alt.X(
                "GB/s:Q",
                title="GB/s per direction (intra: one GPU's link; inter: bus "
                "bandwidth, as NCCL reaches it on the nominal links)",
            ),
            color=alt.Color("kind:N", title=""),
            tooltip=["fit", "kind", alt.Tooltip("GB/s:Q", format=".4g")],
        )
    )


def show_profile(profile: ClusterProfile) -> None:
    state = st.session_state
    if profile.measurements:
        st.subheader(f"{len(profile.measurements)} measured points")
        points = points_table(profile)
        show_table(points, {column: column for column in points.columns}, height=220)
    st.subheader("Fitted alpha and bandwidth")
    nominal = {"intra": state["cal_intra"], "inter": state["cal_inter"]}
    fits = fits_table(profile, nominal)
    show_table(fits, FIT_TABLE, more=FIT_MORE, more_label="Ranks, points, error, nominal rate")
    for row in fits.to_dict("records"):
        fit_name = f"{escape_markdown(row['collective'])} ({escape_markdown(row['level'])})"
        share = row["per-GPU / nominal (%)"]
        bound = row.get("B / NCCL on nominal (%)")
        if bound is not None and bound == bound:  # several nodes: NCCL on the nominal links
            if bound > 100:
                st.warning(
                    f"{fit_name}: the fitted bus bandwidth is "
                    f"{format_number(bound)} % of what NCCL reaches on {nominal['intra']} inside "
                    f"and one {nominal['inter']} NIC per GPU at their nominal rates (costmodels."
                    "nccl): the log measured more than these links carry. Check 'Level' and "
                    "'Nominal intra-node link' / 'Nominal inter-node link' in the sidebar (the "
                    "nodes may have more NICs than one per GPU)."
                )
        elif share is not None and share == share and share > 100:  # share == share: not NaN
            link = nominal[row["level"]]
            st.warning(
                f"{fit_name}: the fitted per-GPU bandwidth is "
                f"{format_number(share)} % of the nominal {link} rate, more than that link "
                "carries. The log measured more than this link: check 'Level' and 'Nominal "
                f"{row['level']}-node link' in the sidebar (a multi-node all-reduce also moves "
                "part of its bus bandwidth over "
                "NVLink; the node may have more NICs than one per GPU) before using the profile."
            )
    st.caption(
        "Bandwidth B is comparable with nccl-tests' busbw (v/n is its bus factor). A multi-node "
        "log's B is the bus bandwidth of the whole job (every NIC of a node, NVLink inside it, "
        "NCCL's choice of ring or tree), so one GPU's inter-node link is B / ranks per node; "
        "nominal is the chosen link's per-direction rate (costmodels.hardware). Levels the "
        "other pages use: "
        + ", ".join(
            f"{lvl} = {fit.derived_from or (fit.collective or 'given') + ' fit'} "
            f"({fit.bandwidth_Bps / 1e9:.4g} GB/s per GPU)"
            for lvl, fit in profile.levels.items()
        )
        + "."
    )
    for collective, by_level in profile.collectives.items():
        for level, fit in by_level.items():
            st.markdown(f"**{escape_markdown(collective)}**, {escape_markdown(level)}, "
                        f"{fit.world_size or '?'} ranks")
            st.latex(fit_latex(fit))
    curves = fitted_curves(profile)
    if not curves.empty:
        st.subheader("Measured and fitted time")
        times, residuals = measured_vs_fitted(curves)
        st.altair_chart(times, width="stretch", height=TIMES_HEIGHT)
        st.altair_chart(residuals, width="stretch", height=RESIDUAL_HEIGHT)
    st.subheader("Fitted against nominal bandwidth")
    st.altair_chart(against_nominal(fits), width="stretch")


def main() -> None:
    st.title("Calibrate from nccl-tests")
    problems = sidebar()
    write_back(FIELDS)
    show_problems(problems)
    state = st.session_state
    active = state.get(PROFILE_KEY)
    if active is not None:
        shown = escape_markdown(active.name)
        st.info(f"Active profile: '{shown}' (the other pages offer 'Calibrated: {shown}').")
    try:
        source = source_text()
        if source is None:
            st.info("Paste the output of all_reduce_perf (or another nccl-tests binary) to fit it.")
            return
        collective = None if state["coll"] == AUTO else state["coll"]
        level = None if state["level"] == AUTO else state["level"]
        name = state["pname"].strip() or "my cluster"
        profile = read_source(source[0], source[1], collective, level, name)
        notes = log_notes(source[0], collective)
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    for note in notes:
        st.caption(escape_markdown(note))
    show_profile(profile)
    left, right = st.columns(2)
    if left.button("Use this profile", key="use_profile", type="primary"):
        state[PROFILE_KEY] = profile
        shown = escape_markdown(profile.name)
        st.success(f"Profile '{shown}' is active: choose 'Calibrated: {shown}' as a link.")
    slug = re.sub(r"[^a-z0-9]+", "-", profile.name.lower()).strip("-") or "profile"
    right.download_button(
        "Download profile YAML", profile_to_yaml(profile), file_name=f"{slug}.yaml",
        mime="application/x-yaml", key="download_profile",
    )  # fmt: skip


main()
