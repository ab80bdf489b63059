"""The comparison pages (generated/compare/*.md): complete, derived, and numerically right.

The pages are generated once per module (a few seconds: sympy terms, two charts, twelve
iteration predictions). Numbers are recomputed here by other routes: the alpha-beta-gamma
formulas written out by hand from the link presets, ``compression_exchange.exchange_time`` for
the compressors, and a direct ``costmodels.dp.predict`` call for the schedules. Tolerances are
relative 1e-9: both sides evaluate the same closed forms in float64, in a different order.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePosixPath

import pytest
import sympy as sp

from commatlas.docs_site.comparisons import allreduce as ar
from commatlas.docs_site.comparisons import comparison_files
from commatlas.docs_site.comparisons import compressors as cp
from commatlas.docs_site.comparisons import schedulers as sc
from commatlas.docs_site.comparisons._common import FASTEST, GUIDE_PAGES, SCENARIO_PAGE
from costmodels.dp.compression_cost import compute_cost
from costmodels.dp.compression_exchange import exchange_time
from costmodels.dp.predict import SCHEDULE_NAMES, Cluster, Method, predict
from costmodels.formatting import format_seconds
from costmodels.hardware import get_gpu, get_link
from costmodels.symbols import alpha, beta, gamma, n, p
from costmodels.workloads import get_workload
from taxonomy import Taxonomy, load_taxonomy

PAGES = {f"generated/compare/{name}.md" for name in ("compressors", "allreduce", "schedulers")}
REL = 1e-9

# The scenario written out from the presets, not through commatlas.docs_site.scenario.
HDR, NVLINK, H200 = get_link("hdr"), get_link("nvlink4"), get_gpu("h200")
ALPHA = HDR.latency_s
BETA = 1 / (HDR.bandwidth_Bps * HDR.achievable_fraction)
GAMMA = 3 / H200.memory_bandwidth_Bps
WORKERS = 64
GRADIENT = 100e6


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return load_taxonomy()


@pytest.fixture(scope="module")
def files(tax: Taxonomy) -> dict[str, str]:
    return comparison_files(tax)


@pytest.fixture(scope="module")
def allreduce_rows(tax: Taxonomy) -> list[ar.CollectiveRow]:
    return ar.allreduce_rows(tax)


@pytest.fixture(scope="module")
def other_rows(tax: Taxonomy) -> list[ar.CollectiveRow]:
    return ar.other_collective_rows(tax)


@pytest.fixture(scope="module")
def compressor_rows(tax: Taxonomy) -> list[cp.CompressorRow]:
    return cp.compressor_rows(tax)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL)


def _row(rows: list[ar.CollectiveRow], record_id: str, variant: str) -> ar.CollectiveRow:
    (found,) = [r for r in rows if r.record.id == record_id and r.variant == variant]
    return found


def _table_line(text: str, *needles: str) -> str:
    """The one table line containing every needle."""
    (line,) = [
        ln for ln in text.splitlines() if ln.startswith("|") and all(x in ln for x in needles)
    ]
    return line


# --- the files -------------------------------------------------------------------------------
def test_exactly_the_three_pages_and_their_referenced_charts(files: dict[str, str]) -> None:
    charts = set(files) - PAGES
    assert PAGES <= set(files)
    assert all(re.fullmatch(r"generated/compare/plots/[\w-]+\.svg", c) for c in charts)
    for chart in charts:
        assert files[chart].lstrip().startswith("<svg")
        name = PurePosixPath(chart).name
        assert sum(f"](plots/{name})" in files[page] for page in PAGES) == 1


def test_links_resolve(files: dict[str, str], tax: Taxonomy) -> None:
    # Pages of other generators these tables rely on; `mkdocs build --strict` checks them too.
    outside = {SCENARIO_PAGE, *GUIDE_PAGES.values()}
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", files[page]):
            assert "://" not in target, target
            path = PurePosixPath("generated/compare", target)
            parts: list[str] = []
            for part in path.parts:
                parts = parts[:-1] if part == ".." else [*parts, part]
            resolved = "/".join(parts)
            if resolved.startswith("records/"):
                assert resolved.removeprefix("records/").removesuffix(".md") in tax.records
            else:
                assert resolved in files or resolved in outside, (page, target)


def test_each_page_names_its_values_and_math_is_well_formed(files: dict[str, str]) -> None:
    for page in PAGES:
        text = files[page]
        assert "](../scenario.md)" in text and "p = 64" in text
        for line in text.splitlines():
            assert line.count(r"\(") == line.count(r"\)"), line
            for formula in re.findall(r"\\\((.*?)\\\)", line):
                assert "|" not in formula.replace(r"\|", ""), formula  # would split the cell


# --- all-reduce --------------------------------------------------------------------------------
def test_every_allreduce_variant_appears_once(
    files: dict[str, str], tax: Taxonomy, allreduce_rows: list[ar.CollectiveRow]
) -> None:
    import costmodels

    homes = ("collective-communication", "in-network-aggregation", "communication-architecture")

    def sums_a_gradient(collective: str | None) -> bool:
        return collective == "all-reduce" or (collective or "").startswith("push/pull")

    expected = {
        (r.id, v)
        for r in tax.records.values()
        if r.cost_model and r.category[0] in homes and sums_a_gradient(r.properties.collective)
        for v in costmodels.get(r.cost_model).variants
    }
    shown = [(r.record.id, r.variant) for r in allreduce_rows]
    assert len(shown) == len(set(shown)) and set(shown) == expected
    named = {
        ("ring-allreduce", "ring"), ("tree-allreduce", "binary-tree"),
        ("tree-allreduce", "double-binary-tree"),
        ("recursive-halving-doubling", "recursive-doubling"),
        ("recursive-halving-doubling", "halving-doubling"),
        ("hierarchical-allreduce", "reduce-scatter-ring"), ("2d-torus-allreduce", "ring-phases"),
        ("sharp", "pipelined"), ("sharp", "store-and-forward"), ("byteps", "summation-service"),
        ("parameter-server", "separate"), ("parameter-server", "colocated"),
    }  # fmt: skip
    assert named <= expected
    text = files["generated/compare/allreduce.md"]
    for record_id, variant in shown:
        assert text.count(f"(../../records/{record_id}.md) | `{variant}` |") == 1


def test_every_other_collective_variant_appears_once(
    files: dict[str, str], other_rows: list[ar.CollectiveRow]
) -> None:
    shown = [(r.record.id, r.variant) for r in other_rows]
    assert len(shown) == len(set(shown))
    assert {i for i, _ in shown} == {
        "allgather",
        "reduce-scatter",
        "broadcast",
        "reduce",
        "alltoall",
    }
    text = files["generated/compare/allreduce.md"]
    for record_id, variant in shown:
        assert text.count(f"(../../records/{record_id}.md) | `{variant}` |") == 1


def test_ring_terms_are_the_textbook_ones(
    files: dict[str, str], allreduce_rows: list[ar.CollectiveRow]
) -> None:
    ring = _row(allreduce_rows, "ring-allreduce", "ring")
    assert sp.simplify(ring.latency - 2 * (p - 1) * alpha) == 0
    assert sp.simplify(ring.bandwidth / beta - 2 * (p - 1) / p * n) == 0
    assert sp.simplify(ring.reduction / gamma - (p - 1) / p * n) == 0
    assert ring.bandwidth_optimal.startswith("yes")
    line = _table_line(files["generated/compare/allreduce.md"], "ring-allreduce.md", "`ring`")
    assert sp.latex(ring.latency) in line and sp.latex(ring.bandwidth) in line


def test_ring_and_sharp_numbers_match_a_hand_computation(
    files: dict[str, str], allreduce_rows: list[ar.CollectiveRow]
) -> None:
    ring = _row(allreduce_rows, "ring-allreduce", "ring")
    sharp = _row(allreduce_rows, "sharp", "pipelined")
    line = _table_line(files["generated/compare/allreduce.md"], "ring-allreduce.md", "`ring`")
    for size in (64e3, GRADIENT):
        steps = WORKERS - 1
        by_hand = 2 * steps * ALPHA + 2 * steps / WORKERS * size * BETA
        by_hand += steps / WORKERS * size * GAMMA
        assert _close(ring.seconds[size], by_hand)
        assert format_seconds(by_hand) in line
        assert _close(sharp.seconds[size], 2 * ALPHA + size * BETA)  # in-switch sum


def test_bandwidth_optimality_is_derived(allreduce_rows: list[ar.CollectiveRow]) -> None:
    verdict = {(r.record.id, r.variant): r.bandwidth_optimal for r in allreduce_rows}
    for optimal in [("ring-allreduce", "ring"), ("2d-torus-allreduce", "ring-phases"),
                    ("hierarchical-allreduce", "reduce-scatter-ring"),
                    ("tree-allreduce", "double-binary-tree")]:  # fmt: skip
        assert verdict[optimal].startswith("yes"), optimal
    for not_optimal in [("tree-allreduce", "binary-tree"),
                        ("recursive-halving-doubling", "recursive-doubling")]:  # fmt: skip
        assert verdict[not_optimal].startswith("no"), not_optimal
    # a binary tree moves 2 n ceil(log2 p): 2 * 6 / (2 * 63 / 64) times the ring at p = 64
    assert verdict[("tree-allreduce", "binary-tree")] == f"no (×{12 / (126 / 64):.3g} at p = 64)"
    assert verdict[("sharp", "pipelined")].startswith("below the bound")


def test_fastest_mark_is_on_the_argmin(
    files: dict[str, str],
    allreduce_rows: list[ar.CollectiveRow],
    other_rows: list[ar.CollectiveRow],
) -> None:
    text = files["generated/compare/allreduce.md"]
    marks = 0
    for rows in (allreduce_rows, other_rows):
        for collective in {r.collective for r in rows}:
            peers = [r for r in rows if r.collective == collective]
            for size in ar.SIZES:
                best = min(r.seconds[size] for r in peers)
                for r in peers:
                    assert (size in r.fastest) == (r.seconds[size] == best)
                    if size in r.fastest:
                        line = _table_line(text, f"{r.record.id}.md", f"`{r.variant}`")
                        assert f"**{format_seconds(r.seconds[size])}** {FASTEST}" in line
                        marks += 1
    assert text.count(FASTEST) == marks


# --- compressors -------------------------------------------------------------------------------
def test_every_compression_record_appears_once(
    files: dict[str, str], tax: Taxonomy, compressor_rows: list[cp.CompressorRow]
) -> None:
    expected = {
        r.id
        for r in tax.records.values()
        if r.category[0] == "compression" or r.properties.compression not in (None, "none")
    }
    assert len(expected) >= 45
    assert sorted(r.record.id for r in compressor_rows) == sorted(expected)
    grouped = files["generated/compare/compressors.md"].split("## Priced at the scenario")[0]
    for record_id in expected:
        assert grouped.count(f"(../../records/{record_id}.md)") == 1, record_id


def test_topk_and_fp16_are_recomputed_independently(
    files: dict[str, str], compressor_rows: list[cp.CompressorRow]
) -> None:
    rows = {r.record.id: r for r in compressor_rows}
    d = GRADIENT / 4
    steps = WORKERS - 1
    dense_wire = 2 * steps / WORKERS * GRADIENT
    dense_s = 2 * steps * ALPHA + dense_wire * BETA + steps / WORKERS * GRADIENT * GAMMA

    # top-k at 1 %: ring all-gather of k (value, int32 index) pairs, plus the top-k kernel
    k = math.ceil(0.01 * d)
    topk = rows["topk-sparsification"].computed
    assert _close(topk.wire_bytes, steps * k * 8)
    assert _close(topk.ratio, dense_wire / (steps * k * 8))
    assert _close(topk.communication_s, steps * (ALPHA + 8 * k * BETA + 4 * k * GAMMA))
    assert _close(topk.compute_s, compute_cost("topk_0.01_s", GRADIENT))
    assert _close(topk.dense_s, dense_s)
    comm, compute = exchange_time("topk:0.01", GRADIENT, WORKERS, ALPHA, BETA, GAMMA)
    assert _close(topk.total_s, comm + compute)

    # fp16: the ring all-reduce of half the bytes, plus the cast kernel
    half = GRADIENT / 2
    fp16 = rows["fp16-comm"].computed
    assert _close(fp16.ratio, 2.0)
    by_hand = 2 * steps * ALPHA + 2 * steps / WORKERS * half * BETA + steps / WORKERS * half * GAMMA
    assert _close(fp16.communication_s, by_hand)
    assert _close(fp16.total_s, sum(exchange_time("fp16", GRADIENT, WORKERS, ALPHA, BETA, GAMMA)))

    # QSGD at the scenario's 8 bits, through the exchange module only
    qsgd = rows["qsgd"].computed
    assert _close(qsgd.total_s, sum(exchange_time("qsgd:8", GRADIENT, WORKERS, ALPHA, BETA, GAMMA)))

    text = files["generated/compare/compressors.md"]
    for record_id, c in (("topk-sparsification", topk), ("fp16-comm", fp16)):
        line = _table_line(text, f"{record_id}.md", "| quantization |" if record_id == "fp16-comm"
                           else "| sparsification |")  # fmt: skip
        assert f"{format_seconds(c.total_s)} (×{dense_s / c.total_s:.3g})" in line
        assert f"| {c.ratio:.3g}× |" in line


def test_compressor_cells_are_the_records_own(compressor_rows: list[cp.CompressorRow]) -> None:
    rows = {r.record.id: r for r in compressor_rows}
    assert rows["topk-sparsification"].code_communication == "allgather"
    assert rows["fp16-comm"].code_communication == "allreduce"
    assert rows["random-k"].code_communication == "allreduce"  # shared seed by default
    assert rows["atomo"].computed is None and rows["atomo"].code_communication is None


def test_summary_marks_best_and_worst(
    files: dict[str, str], compressor_rows: list[cp.CompressorRow]
) -> None:
    priced = sorted((r for r in compressor_rows if r.computed), key=lambda r: r.computed.total_s)
    summary = files["generated/compare/compressors.md"].split("## Priced at the scenario")[1]
    best, worst = priced[0], priced[-1]
    assert f"**{format_seconds(best.computed.total_s)}** {FASTEST}" in _table_line(
        summary, f"{best.record.id}.md"
    )
    assert f"**{format_seconds(worst.computed.total_s)}** {cp.SLOWEST}" in _table_line(
        summary, f"{worst.record.id}.md"
    )


# --- schedulers --------------------------------------------------------------------------------
def test_every_scheduling_record_appears_once(files: dict[str, str], tax: Taxonomy) -> None:
    text = files["generated/compare/schedulers.md"].split("## One iteration")[0]
    expected = [r.id for r in tax.records.values() if r.category[0] == "scheduling"]
    assert len(expected) >= 10
    for record_id in expected:
        assert text.count(f"(../../records/{record_id}.md)") == 1
    assert set(sc.SCHEDULE_RECORDS) == set(SCHEDULE_NAMES)
    assert set(sc.SCHEDULE_RECORDS.values()) <= set(tax.records)


@pytest.mark.parametrize("workload_name", sc.WORKLOADS)
def test_schedule_numbers_equal_a_direct_prediction(
    files: dict[str, str], workload_name: str
) -> None:
    workload = get_workload(workload_name)
    profile = workload.profile("fp32")
    cluster = Cluster(
        nodes=8, gpus_per_node=8,
        intra_bandwidth_Bps=NVLINK.bandwidth_Bps * NVLINK.achievable_fraction,
        intra_latency_s=NVLINK.latency_s,
        inter_bandwidth_Bps=HDR.bandwidth_Bps * HDR.achievable_fraction,
        inter_latency_s=HDR.latency_s, reduction_Bps=H200.memory_bandwidth_Bps / 3,
    )  # fmt: skip
    step = profile.fwd_s + profile.bwd_s
    direct = {
        s: predict(
            workload, profile.batch_size, step, cluster, Method(schedule=s, local_sgd_period=8)
        )
        for s in SCHEDULE_NAMES
    }
    rows = sc.schedule_rows(workload_name)
    assert [r.schedule for r in rows] == list(SCHEDULE_NAMES)
    section = files["generated/compare/schedulers.md"].split(f"### {workload.name}")[1]
    section = section.split("###")[0]
    best = min(d.iteration_time_s for d in direct.values())
    for row in rows:
        want = direct[row.schedule]
        assert _close(row.prediction.iteration_time_s, want.iteration_time_s)
        assert _close(row.prediction.exposed_communication_s, want.exposed_communication_s)
        assert _close(row.speedup, direct["bsp"].iteration_time_s / want.iteration_time_s)
        assert row.fastest == (want.iteration_time_s == best)
        line = _table_line(section, f"`{row.schedule}`")
        assert format_seconds(want.iteration_time_s) in line
        assert format_seconds(want.exposed_communication_s) in line
        assert (FASTEST in line) == row.fastest
