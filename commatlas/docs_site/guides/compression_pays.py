"""Guide: when gradient compression beats the dense all-reduce.

Two break-even bandwidths per compressor, both exact because every total is linear in beta:
the closed form of ``costmodels.dp.compression_breakeven`` (the record's cost model, compute at the
kernel's per-byte rate gamma_c, against the ring all-reduce of ``dense_bytes_expr``; evaluated
here from the models at two betas, which the tests hold equal to ``breakeven``, whose symbolic
solve is too slow for every build), and the one of the full exchange of
``costmodels.dp.compression_exchange.exchange_time`` (which adds the kernel's fixed cost t0 and
charges top-k its selection kernel). Per-link verdicts and times come from ``exchange_time``;
the overlap section from ``costmodels.dp.predict``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import altair as alt
import numpy as np
import pandas as pd

import costmodels
from commatlas.docs_site import Files, scenario
from commatlas.docs_site.guides import _common as c
from costmodels.dp.compression_breakeven import breakeven_beta_expr, dense_bytes_expr
from costmodels.dp.compression_exchange import exchange_time
from costmodels.dp.predict import Method, predict
from costmodels.hardware import get_link
from costmodels.symbols import key_of
from costmodels.workloads import get_workload
from taxonomy import Taxonomy

P = 8 * scenario.GPUS_PER_NODE  # eight nodes
LINKS = ("10gbe", "100gbe", "hdr", "nvlink4")
# (exchange spec, record id, cost-model variant): every compressor with a cost model and kernel.
COMPRESSORS = (
    ("fp16", "fp16-comm", None), ("qsgd:8", "qsgd", None), ("terngrad", "terngrad", None),
    ("signsgd", "signsgd", "sharded-ps"), ("efsignsgd", "ef-signsgd", None),
    ("onebit", "onebit-sgd", None), ("onebitadam", "onebit-adam", "compressed"),
    ("topk:0.01", "topk-sparsification", None), ("randomk:0.01", "random-k", None),
    ("gtopk:0.01", "gtopk", None), ("dgc:0.01", "dgc", None),
    ("threshold:0.01", "threshold-sparsification", None), ("powersgd:4", "powersgd", None),
)  # fmt: skip
CHART_SPECS = ("fp16", "qsgd:8", "signsgd", "topk:0.01", "powersgd:4")
BANDWIDTHS = np.geomspace(0.1e9, 1e12, 41)  # bytes/s for the chart
WORKLOADS, OVERLAP_SPECS, OVERLAP_NETWORKS = ("resnet50", "bert-large"), ("fp16", "powersgd:4"), (
    "10gbe", "hdr")  # fmt: skip
BETA_PROBE = 1e-9  # s/byte


@dataclass(frozen=True)
class Row:
    spec: str
    record_id: str
    wire_bytes: float  # bytes one rank sends (the cost model's volume term)
    closed: tuple[float, bool]  # closed-form (bandwidth, pays below it); inf always, 0 never
    full: tuple[float, bool]  # the same for the full exchange (kernel fixed cost included)
    dense_s: dict[str, float]  # link -> dense ring all-reduce seconds
    compressed_s: dict[str, tuple[float, float]]  # link -> (communication, compute) seconds


def classify(gap: Callable[[float], float]) -> tuple[float, bool]:
    """Break-even of a gap(beta) = T_compressed - T_dense that is linear in beta (as
    ``compression_breakeven.breakeven``: inf always pays, 0 never, else which side)."""
    fixed = gap(0.0)
    saved = -(gap(BETA_PROBE) - fixed) / BETA_PROBE  # bytes saved on the beta term
    if saved > 0:
        return (float("inf") if fixed <= 0 else saved / fixed), True
    if fixed < 0 and saved < 0:
        return saved / fixed, False
    return 0.0, True


def link_args(link: str) -> tuple[float, float]:
    values = c.network_values(link)
    return values["alpha"], values["beta"]


def exchange(spec: str, alpha: float, beta: float, n: float = scenario.MESSAGE_BYTES):
    """(communication, compute) seconds on p = P with the scenario's gamma; the kernels were
    timed on an H200, the scenario's GPU, so their fits apply unscaled (as in the scenario)."""
    return exchange_time(spec, n, P, alpha, beta, scenario.link_values()["gamma"])


def closed_gap(record_id: str, variant: str | None, values: dict) -> Callable[[float], float]:
    dense = dense_bytes_expr(record_id)
    dense_n = float(dense.subs({s: values[key_of(s)] for s in dense.free_symbols}))
    model, ring = costmodels.get(record_id), costmodels.get("ring-allreduce")
    return lambda beta: float(model.evaluate(variant, **{**values, "beta": beta})) - float(
        ring.evaluate(**{**values, "n": dense_n, "beta": beta}))  # fmt: skip


def full_gap(spec: str, alpha: float) -> Callable[[float], float]:
    return lambda beta: sum(exchange(spec, alpha, beta)) - exchange("none", alpha, beta)[0]


def rows(tax: Taxonomy) -> tuple[Row, ...]:
    """One row per compressor; bits are the records' ``bits`` property (scenario default)."""
    return _rows(tuple(tax.records[record_id].properties.bits for _, record_id, _ in COMPRESSORS))


@cache
def _rows(bits: tuple[float | None, ...]) -> tuple[Row, ...]:
    alpha, out = scenario.link_values()["alpha"], []
    for (spec, record_id, variant), b in zip(COMPRESSORS, bits, strict=True):
        values = {
            k: float(v)
            for k, v in scenario.symbol_values(record_id, P, scenario.MESSAGE_BYTES, b).items()
        }
        wire = float(costmodels.get(record_id).evaluate_volume(variant, **values))
        out.append(Row(spec, record_id, wire, classify(closed_gap(record_id, variant, values)),
                       classify(full_gap(spec, alpha)),
                       {n: exchange("none", *link_args(n))[0] for n in LINKS},
                       {n: exchange(spec, *link_args(n)) for n in LINKS}))  # fmt: skip
    return tuple(out)


def pays(row: Row, link: str) -> bool:
    return sum(row.compressed_s[link]) < row.dense_s[link]


def fmt_breakeven(point: tuple[float, bool]) -> str:
    bandwidth, below = point
    if bandwidth in (0.0, float("inf")):
        return "never" if bandwidth == 0 else "always"
    return f"{'below' if below else 'above'} {c.format_bandwidth(bandwidth)}"


def table_rows(tax: Taxonomy) -> list[list[str]]:
    out = []
    for row in rows(tax):
        comm, comp = row.compressed_s[scenario.INTER_LINK]
        out.append([c.record_link(tax, row.record_id), f"`{row.spec}`",
                    c.format_bytes(row.wire_bytes), fmt_breakeven(row.closed),
                    fmt_breakeven(row.full), c.format_ms(row.dense_s[scenario.INTER_LINK]),
                    f"{c.format_ms(comm)} + {c.format_ms(comp)}",
                    *("yes" if pays(row, n) else "no" for n in LINKS)])  # fmt: skip
    return out


@cache
def chart_data() -> pd.DataFrame:
    alpha, frames = scenario.link_values()["alpha"], []
    for spec in ("none", *CHART_SPECS):
        ms = [1e3 * sum(exchange(spec, alpha, 1 / bw)) for bw in BANDWIDTHS]
        frames.append(pd.DataFrame({"method": "dense ring" if spec == "none" else spec,
                                    "GBps": BANDWIDTHS / 1e9, "ms": ms}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def chart_svg() -> str:
    log = {"scale": alt.Scale(type="log"), "axis": alt.Axis(format="~g")}
    lines = alt.Chart(chart_data()).mark_line().encode(
        alt.X("GBps:Q", title="link bandwidth (GB/s)", **log),
        alt.Y("ms:Q", title="exchange time (ms)", **log),
        alt.Color("method:N", sort=["dense ring", *CHART_SPECS]))  # fmt: skip
    marks = pd.DataFrame({"GBps": [c.achievable_Bps(n) / 1e9 for n in LINKS],
                          "link": [get_link(n).name for n in LINKS]})  # fmt: skip
    rules = alt.Chart(marks).mark_rule(strokeDash=[3, 3], color="gray").encode(x="GBps:Q")
    names = alt.Chart(marks).mark_text(angle=270, dx=-45, dy=-6, fontSize=10, color="gray")
    chart = lines + rules + names.encode(x="GBps:Q", y=alt.value(45), text="link:N")
    return c.chart_svg(chart.properties(width=460, height=260))


@cache
def overlap() -> dict[tuple[str, str, str, str], float]:
    """(workload, network, schedule, compression) -> predicted iteration seconds."""
    out = {}
    for name in WORKLOADS:
        workload = get_workload(name)
        profile = workload.profile("fp32")
        for network in OVERLAP_NETWORKS:
            for schedule in ("bsp", "fusion"):
                for spec in ("none", *OVERLAP_SPECS):
                    out[name, network, schedule, spec] = predict(
                        workload,
                        profile.batch_size,
                        profile.fwd_s + profile.bwd_s,
                        c.cluster(network, P // scenario.GPUS_PER_NODE),
                        Method("allreduce", schedule, "ring", compression=spec),
                    ).iteration_time_s
    return out  # fmt: skip


def comm_over_backward(name: str, network: str) -> float:
    """Dense BSP exchange (iteration minus the single-GPU step) over the backward pass."""
    profile = get_workload(name).profile("fp32")
    step = profile.fwd_s + profile.bwd_s
    return (overlap()[name, network, "bsp", "none"] - step) / profile.bwd_s


def overlap_cases() -> list[tuple[str, str, str, float, float]]:
    """(workload, network, spec, saved under BSP, saved under fusion) seconds."""
    t = overlap()
    return [(w, n, s, t[w, n, "bsp", "none"] - t[w, n, "bsp", s],
             t[w, n, "fusion", "none"] - t[w, n, "fusion", s])
            for w in WORKLOADS for n in OVERLAP_NETWORKS for s in OVERLAP_SPECS]  # fmt: skip


def overlap_rows() -> list[list[str]]:
    t = overlap()
    return [[get_workload(w).name, get_link(n).name, f"{comm_over_backward(w, n):.2f}",
             f"`{s}`", *(c.format_ms(t[w, n, sch, k]) for sch in ("bsp", "fusion")
                        for k in ("none", s)), c.format_ms(bsp), c.format_ms(fused)]
            for w, n, s, bsp, fused in overlap_cases()]  # fmt: skip


def kept_ranges() -> dict[bool, tuple[float, float]]:
    """comm > backward? -> (min, max) share of the BSP gain that survives under fusion."""
    out: dict[bool, list[float]] = {True: [], False: []}
    for w, n, _, bsp, fused in overlap_cases():
        out[comm_over_backward(w, n) > 1].append(fused / bsp)
    return {k: (min(v), max(v)) for k, v in out.items() if v}


def facts(tax: Taxonomy) -> dict[str, list[str]]:
    """Which compressors pay where (read off the rows; the prose lists them)."""
    table, ring_bytes = rows(tax), 2 * (P - 1) / P * scenario.MESSAGE_BYTES
    fastest = max(c.achievable_Bps(n) for n in LINKS)
    return {
        **{link: [f"`{r.spec}`" for r in table if pays(r, link)] for link in LINKS},
        "never": [f"`{r.spec}` ({r.wire_bytes / ring_bytes:.1f}×)"
                  for r in table if r.closed[0] == 0],
        "t0_only": [f"`{r.spec}` ({c.format_bandwidth(r.full[0])})" for r in table
                    if r.closed[0] == float("inf") and fastest < r.full[0] < float("inf")],
        "selection": [f"`{r.spec}` ({c.format_bandwidth(r.full[0])})" for r in table
                      if r.closed[0] == float("inf") and r.full[0] <= fastest],
    }  # fmt: skip


def page_text(tax: Taxonomy) -> str:
    known, link, kept = facts(tax), get_link, kept_ranges()
    w, n, s, bsp, fused = max(overlap_cases(), key=lambda k: k[3] - k[4])
    fp16_beta = __import__("sympy").latex(breakeven_beta_expr("fp16-comm"))
    out = [
        "# When does gradient compression pay?", "",
        "**The question.** A compressor shrinks what goes on the wire, but it costs GPU time to "
        "encode and decode, and most compressed gradients cannot be summed on the way, so they "
        "are all-gathered instead of all-reduced. When is the total shorter than the dense ring "
        "all-reduce of the same gradient, and does overlapping communication with the backward "
        "pass change the answer?", "",
        f"**Values used** (the site's [reference scenario]({c.SCENARIO_PAGE})): p = {P} GPUs "
        f"({P // scenario.GPUS_PER_NODE} nodes of {scenario.GPUS_PER_NODE}), one fp32 gradient "
        f"of n = {c.format_bytes(scenario.MESSAGE_BYTES)}, sparsifiers keep "
        f"{scenario.DENSITY:.0%} of the elements, QSGD sends {scenario.DEFAULT_BITS} bits, "
        f"PowerSGD rank {scenario.POWERSGD_RANK}, reduction γ = 3 / H200 memory bandwidth. "
        "Compute is the H200-measured kernel of each method, fitted as t = t0 + c · bytes "
        "(`costmodels.dp.compression_cost`), applied unscaled since the scenario's GPU is an "
        "H200. Links: "
        f"{', '.join(c.link_label(x) for x in LINKS)}.", "",
        "## Break-even bandwidth", "",
        "Both totals are linear in β (seconds per byte): the compressor's T_c = A_c + B_c β "
        "(communication plus compute) and the dense ring's T_d = A_d + B_d β. They are equal at "
        "β* = (A_c − A_d)/(B_d − B_c), and a compressor that sends fewer bytes pays on links "
        "slower than 1/β*. For FP16 the cost models give", "",
        "$$", rf"\beta^* = {fp16_beta}", "$$", "",
        "The table has two break-evens: the closed form of the record's cost model (compute at "
        "the kernel's per-byte rate), and that of the full exchange (`exchange_time`), which "
        "adds each kernel's fixed cost t0 and, for top-k, the selection kernel its cost model "
        f"leaves out. Times are on {link(scenario.INTER_LINK).name}; the second table says "
        "whether the compressed exchange (communication + compute) beats the dense one on each "
        "link (two tables, so that neither is wider than the page).", "",
        *c.table(["technique", "spec", "bytes sent per rank", "break-even (cost model)",
                  "break-even (full exchange)", "dense (ms)", "compressed: comm + compute (ms)"],
                 [row[:7] for row in table_rows(tax)]), "",
        *c.table(["technique", *(f"pays on {link(x).name}" for x in LINKS)],
                 [[row[0], *row[7:]] for row in table_rows(tax)]), "",
        f"- Pay on every link up to NVLink 4: {', '.join(known['nvlink4'])}.",
        f"- Pay on InfiniBand HDR: {', '.join(known['hdr'])}; on 10 GbE: "
        f"{', '.join(known['10gbe'])}.",
        f"- Never pay at p = {P}: {', '.join(known['never'])} (bytes sent per rank as a "
        "multiple of the dense ring's). They are all-gathered, so every rank receives p − 1 "
        "compressed copies and the saving shrinks as p grows.",
        f"- Always paying by the cost model, with a finite break-even in the full exchange: "
        f"{', '.join(known['t0_only'])} only through the kernels' fixed cost, far above any "
        f"link here; {', '.join(known['selection'])} because the full exchange counts top-k's "
        "selection kernel, which its cost model leaves out, so it stops paying on NVLink 4.",
        "",
        "![Exchange time of the dense ring and five compressors against link bandwidth]"
        "(plots/compression-vs-bandwidth.svg)", "",
        f"*One {c.format_bytes(scenario.MESSAGE_BYTES)} gradient on p = {P}, "
        f"α = {c.format_seconds(scenario.link_values()['alpha'])}, full exchange; dashed: the "
        "achievable bandwidth of each link.*", "",
        "## Overlap changes the answer", "",
        "Break-even compares exchanges in isolation. In training, a schedule that overlaps the "
        f"dense all-reduce with the backward pass ({c.record_link(tax, 'tensor-fusion')}, "
        "64 MiB buckets) already hides part of what compression would save. Predicted "
        "iterations (ms) with `costmodels.dp.predict`: measured H200 step of each model, "
        f"{P} GPUs with NVLink 4 inside nodes and the named network between them, reduction "
        "left free as `commatlas predict` does; comm/backward is the dense BSP exchange over "
        "the backward pass.", "",
        *c.table(["model", "network", "comm/backward", "compressor", "BSP dense",
                  "BSP compressed", "fusion dense", "fusion compressed", "saved (BSP)",
                  "saved (fusion)"], overlap_rows()),
        f"Where the dense exchange is longer than the backward pass, compression keeps "
        f"{kept[True][0]:.0%}–{kept[True][1]:.0%} of its BSP gain under fusion; where it is "
        f"shorter, {kept[False][0]:.0%}–{kept[False][1]:.0%}. The largest change: `{s}` on "
        f"{get_workload(w).name} over {link(n).name} saves {c.format_ms(bsp)} ms per iteration "
        f"under BSP but {c.format_ms(fused)} ms with fusion, because most of the dense exchange it "
        "replaces was already hidden behind the backward pass.", "",
        *c.reproduce(reproduce_lines()),
    ]  # fmt: skip
    return "\n".join(out)


def reproduce_lines() -> list[str]:
    alpha, beta = link_args(scenario.INTER_LINK)
    gamma = scenario.link_values()["gamma"]
    comm, comp = exchange("powersgd:4", alpha, beta)
    return [
        "- The PowerSGD row at HDR, in Python:", "",
        "    ```python",
        "    from costmodels.dp.compression_exchange import exchange_time",
        f"    exchange_time(\"powersgd:4\", dense_bytes={scenario.MESSAGE_BYTES:.0f}, p={P}, "
        f"alpha={alpha!r}, beta=1 / {1 / beta!r}, gamma={gamma!r})",
        f"    # ({comm:.6g}, {comp:.6g}) seconds: communication, compute",
        "    ```", "",
        "- The cost-model column: `costmodels.dp.compression_breakeven.breakeven(record_id, "
        "variant, values)` with `values = commatlas.docs_site.scenario.symbol_values(record_id, "
        f"{P}, {scenario.MESSAGE_BYTES:.0f}, bits)`.",
        "- An overlap row: `commatlas predict --workload bert-large --batch-size 32 "
        f"{c.predict_flags('hdr', P // scenario.GPUS_PER_NODE)} --schedule fusion "
        "--compression fp16 --json`.",
        "- The Compression break-even page of the [calculator](../../calculator.md) does this "
        "for your tensor, network and GPU; the [compressor comparison](../compare/compressors.md) "
        "lists every compressor at the reference scenario.",
    ]  # fmt: skip


def files(tax: Taxonomy) -> Files:
    return {
        "generated/guides/compression-pays.md": page_text(tax),
        "generated/guides/plots/compression-vs-bandwidth.svg": chart_svg(),
    }
