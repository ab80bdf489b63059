"""Guide: measure your own cluster and feed the fit to the predictions.

The numbers are fits of real nccl-tests output kept in the repository
(``tests/costmodels/data/nccl_tests``, provenance in its SOURCES.md), read and fitted with
``costmodels.calibration.profile`` exactly as ``commatlas import-nccl-tests`` and the calculator's
Calibrate
page do, then compared with the nominal link presets of ``costmodels.hardware`` and used to
predict the logs' own 1 MiB and 1 GiB all-reduces.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import altair as alt
import pandas as pd
import sympy as sp

import costmodels
from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from commatlas.measure.collectives import SUPPORTED, size_range
from costmodels.calibration.nccl_tests import parse_runs
from costmodels.calibration.profile import (
    FORMS,
    ClusterProfile,
    LinkFit,
    Measurement,
    fit_alpha_beta,
    parse_nccl_tests,
    profile_from_measurements,
    profile_to_yaml,
)
from costmodels.dp.collective_time import allreduce_time
from costmodels.hardware import get_link
from costmodels.symbols import alpha, beta
from taxonomy import Taxonomy

DATA = Path(__file__).resolve().parents[3] / "tests" / "costmodels" / "data" / "nccl_tests"
LOGS = {  # file -> the collective it measured (the logs do not name their binary)
    "superbench_8xa100_allreduce.txt": "all-reduce",
    "superbench_8xa100_allgather.txt": "all-gather",
    "superbench_8xa100_reducescatter.txt": "reduce-scatter",
    "superbench_8xa100_alltoall.txt": "all-to-all",
    "superbench_8xa100_broadcast.txt": "broadcast",
    "oke_2x8xa100_allreduce.txt": "all-reduce",
}
ONE_NODE, TWO_NODES = "superbench_8xa100_allreduce.txt", "oke_2x8xa100_allreduce.txt"
NOMINAL = {"intra": "nvlink3", "inter": "hdr"}  # A100 nodes; one HDR link per GPU as reference
SIZES = (2**20, 2**30)  # the predictions: 1 MiB and 1 GiB, both measured in the logs


@cache
def measurements(name: str) -> tuple[Measurement, ...]:
    return tuple(parse_nccl_tests((DATA / name).read_text(encoding="utf-8"), LOGS[name]))


@cache
def fit(name: str) -> LinkFit:
    return fit_alpha_beta(measurements(name), LOGS[name])


@cache
def profile() -> ClusterProfile:
    """All six logs in one profile, as ``commatlas import-nccl-tests *.txt`` builds it."""
    every = [m for name in LOGS for m in measurements(name)]
    return profile_from_measurements(every, "a100-logs", "nccl-tests")


def fit_rows() -> list[list[str]]:
    out = []
    for name in LOGS:
        run = parse_runs((DATA / name).read_text(encoding="utf-8"))[0]
        f, largest = fit(name), max(measurements(name), key=lambda m: m.bytes)
        hosts = f"{run.world_size} ({len(run.hosts)} × {run.ranks_per_host})"
        out.append([f"`{name}`", LOGS[name], hosts,
                    str(f.points), f"{f.alpha_s * 1e6:.3g}", f"{f.bandwidth_Bps / 1e9:.4g}",
                    f"{largest.busbw_Bps / 1e9:.4g}", f"{f.median_abs_rel_error:.1%}",
                    f"{f.max_abs_rel_error:.1%}"])  # fmt: skip
    return out


def nominal_rows() -> list[list[str]]:
    out = []
    for level, preset in NOMINAL.items():
        f, link, reach = profile().levels[level], get_link(preset), c.achievable_Bps(preset)
        ratios = [f"{f.bandwidth_Bps / reach:.2f}", f"{f.alpha_s / link.alpha_s:.2f}"]
        out.append([level, f"{f.alpha_s * 1e6:.3g}", f"{f.bandwidth_Bps / 1e9:.4g}", link.name,
                    f"{link.alpha_s * 1e6:.3g}", f"{reach / 1e9:.4g}", *ratios])  # fmt: skip
    return out


def _model(case: str, p: int, n: float, links: dict[str, tuple[float, float]]) -> float:
    """One all-reduce priced with (alpha, beta) per level: ring on one level, or hierarchical."""
    if case == "hierarchical":
        (ai, bi), (a, b) = links["intra"], links["inter"]
        return float(allreduce_time("hierarchical", p=p, g=8, n=n, gamma=0.0, alpha_intra=ai,
                                    beta_intra=bi, alpha=a, beta=b))  # fmt: skip
    a, b = links["intra" if p == 8 else "inter"]
    return float(allreduce_time("ring", p=p, n=n, gamma=0.0, alpha=a, beta=b))


CASES = (("8 GPUs, one node, ring", ONE_NODE, 8, "ring"),
         ("16 GPUs, two nodes, hierarchical", TWO_NODES, 16, "hierarchical"),
         ("16 GPUs, two nodes, ring over the network", TWO_NODES, 16, "ring"))  # fmt: skip


def predictions() -> list[dict[str, object]]:
    """Measured against nominal and calibrated predictions of the logs' own all-reduces."""
    cal = {k: (f.alpha_s, 1 / f.bandwidth_Bps) for k, f in profile().levels.items()}
    nom = {k: (get_link(v).alpha_s, get_link(v).beta_s_per_byte) for k, v in NOMINAL.items()}
    out = []
    for label, log, p, case in CASES:
        for n in SIZES:
            (measured,) = [m.seconds for m in measurements(log) if m.bytes == n]
            out.append({"case": label, "n": n, "measured": measured,
                        "nominal": _model(case, p, n, nom), "calibrated": _model(case, p, n, cal),
                        "fit": float(fit(log).time("all-reduce", p, n))})  # fmt: skip
    return out


def prediction_rows() -> list[list[str]]:
    def cell(row: dict, key: str) -> str:
        error = row[key] / row["measured"] - 1
        return f"{c.format_seconds(row[key])} ({error:+.0%})"

    return [[str(r["case"]), c.format_bytes(r["n"], binary=True), c.format_seconds(r["measured"]),
             cell(r, "nominal"), cell(r, "calibrated"), cell(r, "fit")]
            for r in predictions()]  # fmt: skip


def chart_svg() -> str:
    rows = []
    for name in (ONE_NODE, TWO_NODES):
        f = fit(name)
        for m in measurements(name):
            if m.bytes > 0:
                model = float(f.time(m.collective, m.world_size, m.bytes))
                rows.append({"log": f"{m.world_size} A100 ({name.split('_')[0]})", "bytes": m.bytes,
                             "measured µs": m.seconds * 1e6, "fitted µs": model * 1e6,
                             "residual": model / m.seconds - 1})  # fmt: skip
    base = alt.Chart(pd.DataFrame(rows)).encode(
        alt.X("bytes:Q", scale=alt.Scale(type="log"), title="message size n (bytes)",
              axis=alt.Axis(format="~s")), alt.Color("log:N"))  # fmt: skip
    log_y = {"scale": alt.Scale(type="log"), "axis": alt.Axis(format="~g")}
    points = base.mark_point(filled=True, size=25).encode(
        alt.Y("measured µs:Q", title="time (µs)", **log_y))  # fmt: skip
    time = (points + base.mark_line().encode(alt.Y("fitted µs:Q"))).properties(
        width=460, height=200
    )
    residual = base.mark_line(point=True).encode(
        alt.Y("residual:Q", title="fit / measured − 1", axis=alt.Axis(format="%"))
    ).properties(width=460, height=110)  # fmt: skip
    return c.chart_svg(alt.vconcat(time, residual))


def form_latex(collective: str) -> tuple[str, str]:
    """(s, v): the alpha and beta coefficients of the collective's cost model, in LaTeX."""
    model_id, variant = FORMS[collective]
    expr = costmodels.get(model_id).variant(variant).time
    return sp.latex(sp.diff(expr, alpha)), sp.latex(sp.factor(sp.diff(expr, beta)))


def profile_yaml() -> str:
    """The levels of the profile as YAML (measurements and the creation time left out)."""
    levels = profile().model_copy(update={"collectives": {}, "measurements": []})
    text = profile_to_yaml(levels)
    dropped = ("created:", "collectives:", "measurements:")
    return "\n".join(line for line in text.splitlines() if not line.startswith(dropped))


def worst_sizes() -> dict[str, tuple[float, float]]:
    """Per log: (size, relative residual) of the point the fit misses most."""
    out = {}
    for name in LOGS:
        f = fit(name)
        errors = [(abs(float(f.time(m.collective, m.world_size, m.bytes)) / m.seconds - 1), m.bytes)
                  for m in measurements(name) if m.bytes > 0]  # fmt: skip
        error, size = max(errors)
        out[name] = (size, error)
    return out


def page_text(tax: Taxonomy) -> str:
    fits = {name: fit(name) for name in LOGS}
    one_node = [f for name, f in fits.items() if name.startswith("superbench")]
    gap = max(abs(f.bandwidth_Bps / max(measurements(n), key=lambda m: m.bytes).busbw_Bps - 1)
              for n, f in fits.items())  # fmt: skip
    worst = worst_sizes()
    rows = predictions()
    s_ar, v_ar = form_latex("all-reduce")
    s_ag, v_ag = form_latex("all-gather")
    inter = profile().levels["inter"]
    sizes = size_range("1KB", "256MB")
    out = [
        "# Calibrate the models to your cluster", "",
        "**The question.** The link presets behind every other page are nominal rates with "
        "estimated latencies and achievable fractions. How do you measure your own cluster's α "
        "and bandwidth, feed them to the predictions, and how much do the answers move?", "",
        "## Measure", "",
        "Either time the collectives with PyTorch (one process per GPU, NCCL on CUDA):", "",
        "```bash",
        "# one node of 8 GPUs",
        "torchrun --standalone --nproc-per-node=8 -m commatlas.calibrate --device cuda \\",
        "    --out my-cluster.yaml --nominal nvlink4",
        "# two nodes: run on each, with the first node's address",
        "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-id=calib --rdzv-backend=c10d \\",
        "    --rdzv-endpoint=NODE0:29400 -m commatlas.calibrate --device cuda \\",
        "    --out my-cluster.yaml",
        "```", "",
        f"It times {', '.join(SUPPORTED)} at {len(sizes)} sizes from "
        f"{c.format_bytes(sizes[0], binary=True)} to {c.format_bytes(sizes[-1], binary=True)} "
        "by default "
        "(`--sizes`, `--collectives`): warm-up calls, then each timed call after a barrier, the "
        "slowest rank's time, the median over repeats; rank 0 fits and writes the YAML. A "
        "collective whose times do not grow with the size (a busy machine) is measured again "
        "with three times the repeats and sizes up to 16 times larger, twice; what still "
        "cannot be fitted ends in one line, `measurements too noisy: ...`, with the times "
        "measured. Or run "
        "NVIDIA's nccl-tests (one process with `-g 8` GPUs, or `mpirun` across nodes) and import "
        "its output:", "",
        "```bash",
        "./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8 > all_reduce.log",
        "commatlas import-nccl-tests all_reduce.log --collective all-reduce --out my-cluster.yaml",
        "```", "",
        "Without `--collective` (or the Calibrate page's menu left on auto-detect) a log that "
        "lost its binary's name is read from its table: busbw / algbw is 2(p-1)/p for "
        "all-reduce, (p-1)/p for all-gather, reduce-scatter and all-to-all, 1 for broadcast, "
        "reduce and send/recv, and the redop and root fields tell these apart; what the table "
        "cannot settle (all-gather or all-to-all) is asked for, and a chosen collective the "
        "table contradicts is refused. Rows of size 0 are left out and said: NCCL returns "
        "before communicating, so they time a launch.", "",
        "## What the fit does", "",
        "Each collective is fitted to t = s(p) α + v(p, n) / B, with s and v the coefficients "
        "of α and β in the project's ring cost model of that collective (the ring is one of "
        "NCCL's two main all-reduce algorithms), e.g. ring all-reduce and ring all-gather"
        f" ({c.record_link(tax, 'ring-allreduce')}, "
        f"{c.record_link(tax, 'allgather')}):", "",
        "$$", rf"s_{{\mathrm{{all\text{{-}}reduce}}}} = {s_ar}, \quad "
        rf"v_{{\mathrm{{all\text{{-}}reduce}}}} = {v_ar}, \qquad "
        rf"s_{{\mathrm{{all\text{{-}}gather}}}} = {s_ag}, \quad "
        rf"v_{{\mathrm{{all\text{{-}}gather}}}} = {v_ag}", "$$", "",
        "v / n is nccl-tests' bus-bandwidth factor, so B compares with its `busbw` column. The "
        "fit is robust (Huber weights): first B with α on the residuals in seconds, which the "
        "large messages decide; then α with B fixed on relative residuals, which the small ones "
        "decide (`costmodels.calibration.profile.fit_alpha_beta`).", "",
        "## Real logs", "",
        "Six public nccl-tests outputs of A100-SXM4-40GB machines kept in the repository "
        "(`tests/costmodels/data/nccl_tests`, sources in its SOURCES.md): one node of 8 GPUs "
        "(five collectives) and two nodes of 8 over RDMA (all-reduce). Fitted with the "
        "commands above:", "",
        *c.table(["log", "collective", "ranks (hosts × per host)", "sizes fitted", "α (µs)",
                  "B (GB/s)", "busbw at the largest size (GB/s)", "median abs. residual",
                  "max abs. residual"], fit_rows()),
        f"The fitted B is within {gap:.1%} of the `busbw` nccl-tests printed at its largest "
        f"size in every log; one-node bandwidths range from "
        f"{c.format_bandwidth(min(f.bandwidth_Bps for f in one_node))} to "
        f"{c.format_bandwidth(max(f.bandwidth_Bps for f in one_node))}. The fit misses most at "
        + ", ".join(f"{c.format_bytes(size, binary=True)} ({LOGS[n]}, {error:.0%})"
                    for n, (size, error) in worst.items())
        + ": mid-sized messages, where NCCL switches between algorithms and protocols (LL, "
        "LL128, Simple) by size ([NVIDIA/nccl#754](https://github.com/NVIDIA/nccl/issues/754)) "
        "and no single line follows the curve.", "",
        "![Measured and fitted all-reduce times of the two logs, with relative residuals]"
        "(plots/calibrate-fit.svg)", "",
        "## Fitted against nominal", "",
        "A profile holds one fit per level: *intra* (inside a node: the one-node all-reduce) "
        "and *inter* (one GPU's share of the network: the two-node fit's bus bandwidth over the "
        f"{inter.ranks_per_node} ranks of a node, {c.format_bandwidth(inter.bandwidth_Bps)}). "
        "Against "
        "the presets of `costmodels.hardware` (NVLink 3 for A100 nodes; HDR, one 200 Gbit/s "
        "link per GPU, as a reference, since the log does not name its network):", "",
        *c.table(["level", "fitted α (µs)", "fitted B (GB/s)", "preset", "preset α (µs)",
                  "preset achievable B (GB/s)", "B fitted / preset", "α fitted / preset"],
                 nominal_rows()),
        "## How much the predictions move", "",
        "The logs' own 1 MiB and 1 GiB all-reduces, predicted from the presets (nominal), "
        "from the profile's two levels (calibrated, as the calculator and `commatlas predict "
        "--profile` price them) and from the log's own fit; errors against the measurement:", "",
        *c.table(["case", "n", "measured", "nominal", "calibrated", "the log's fit"],
                 prediction_rows()),
        *_prediction_sentences(rows),
        "## Use the profile", "",
        "The YAML (`profile_to_yaml`; the file also keeps every measurement and a creation "
        "time) of the six logs imported together:", "",
        "```yaml", profile_yaml(), "```", "",
        "On the Calibrate page of the [calculator](../../calculator.md), paste or upload the "
        "nccl-tests output or this YAML and press *Use this profile*: every other page then "
        "offers *Calibrated: <name>* in its link menus. From the command line, "
        "`commatlas predict --profile my-cluster.yaml ...` replaces the four link flags.", "",
        *c.reproduce([
            "- `commatlas import-nccl-tests tests/costmodels/data/nccl_tests/"
            f"{ONE_NODE} --collective all-reduce --out a100.yaml` prints the first row's fit "
            f"(α {fits[ONE_NODE].alpha_s * 1e6:.3f} µs, B "
            f"{fits[ONE_NODE].bandwidth_Bps / 1e9:.4f} GB/s).",
            "- In Python: `costmodels.calibration.profile.parse_nccl_tests(text, collective)`, "
            "`fit_alpha_beta(measurements, collective)`, `profile_from_measurements(...)`.",
        ]),
    ]  # fmt: skip
    return "\n".join(out)


def _prediction_sentences(rows: list[dict]) -> list[str]:
    one_node = [r for r in rows if r["case"].startswith("8 GPUs")]
    hier = [r for r in rows if "hierarchical" in r["case"]]
    ring = [r for r in rows if "ring over" in r["case"]]

    def err(r: dict, key: str) -> float:
        return abs(r[key] / r["measured"] - 1)

    def span(group: list[dict]) -> str:
        errors = [err(r, "calibrated") for r in group]
        return f"{min(errors):.0%}–{max(errors):.0%}"

    big = max(one_node, key=lambda r: r["n"])
    return [
        f"- One node: calibration moves the {c.format_bytes(big['n'], binary=True)} prediction "
        "from "
        f"{err(big, 'nominal'):.0%} to {err(big, 'calibrated'):.0%} off; at "
        f"{c.format_bytes(one_node[0]['n'], binary=True)} both stay "
        f"{err(one_node[0], 'calibrated'):.0%}"
        f"–{err(one_node[0], 'nominal'):.0%} low, the protocol region above.",
        f"- Two nodes: the hierarchical model with calibrated levels is {span(hier)} off, a "
        f"flat ring priced entirely at one GPU's network share {span(ring)} (every step at "
        "the slowest link, as the flat formulas assume), while the log's own bus-bandwidth fit "
        f"is {err(hier[0], 'fit'):.0%} off at {c.format_bytes(hier[0]['n'], binary=True)} and "
        f"{err(hier[-1], 'fit'):.0%} at {c.format_bytes(hier[-1]['n'], binary=True)}: for large "
        "messages, price a job with the fit of a job of the same shape.",
        "",
    ]


def files(tax: Taxonomy) -> Files:
    return {
        "generated/guides/calibrate-cluster.md": page_text(tax),
        "generated/guides/plots/calibrate-fit.svg": chart_svg(),
    }
