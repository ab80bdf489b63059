"""The five guides: every page is generated, a row of every table is recomputed independently
(hand-written alpha-beta formulas, or the cost models called directly with the stated values),
every claim the prose makes holds, and every link and command resolves.

Tolerances: recomputed numbers must match to 1e-9 relative (the same arithmetic in another
order); a number read back from a page matches its formatted form exactly. The site is not
built here (tests/surfaces/test_docs_build.py does that); ``guide_files`` runs once per module.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from commatlas.docs_site import scenario
from commatlas.docs_site.guides import SLUGS, guide_files
from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides import calibrate_cluster as cal
from commatlas.docs_site.guides import choose_allreduce as ar
from commatlas.docs_site.guides import compression_pays as cp
from commatlas.docs_site.guides import llm_parallelism as llm
from commatlas.docs_site.guides import scheduling_overlap as so
from costmodels.hardware import get_link
from taxonomy import load_taxonomy

ROOT = Path(__file__).parents[2]
REL = 1e-9


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy()


@pytest.fixture(scope="module")
def files(tax) -> dict[str, str]:
    return guide_files(tax)


def page(files: dict[str, str], slug: str) -> str:
    return files[f"generated/guides/{slug}.md"]


def row_of(text: str, first_cells: str, containing: str = "") -> str:
    """The one table line starting with ``| first_cells |`` (and holding ``containing``)."""
    (line,) = [x for x in text.splitlines()
               if x.startswith(f"| {first_cells} |") and containing in x]  # fmt: skip
    return line


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


def hdr() -> tuple[float, float, float]:
    link = get_link("hdr")
    return link.alpha_s, link.beta_s_per_byte, scenario.link_values()["gamma"]


# --- every guide, links and commands --------------------------------------------------------
def test_every_guide_is_generated_with_question_and_reproduction(files) -> None:
    pages = {f"generated/guides/{slug}.md" for slug in SLUGS}
    assert set(SLUGS) == {"choose-allreduce", "compression-pays", "scheduling-overlap",
                          "llm-parallelism", "calibrate-cluster", "llm-step-time",
                          "serving", "checkpoint-goodput", "stragglers",
                          "trace-calibration", "cloud-networks", "job-files"}  # fmt: skip
    assert pages <= set(files)
    assert all(p in pages or re.fullmatch(r"generated/guides/plots/[a-z0-9-]+\.svg", p)
               for p in files)  # fmt: skip
    for path in pages:
        text = files[path]
        assert text.startswith("# ") and "**The question.**" in text[:600]
        assert "## Reproduce these numbers" in text
        assert not re.search(r"\bnan\b|\binf\b", text), path


def test_every_link_target_exists(files, tax) -> None:
    for path, text in files.items():
        if not path.endswith(".md"):
            continue
        for target in c.LINK.findall(text):
            if target.startswith("https://"):
                continue
            if target.startswith("../../records/"):
                assert target.removeprefix("../../records/").removesuffix(".md") in tax.records
            elif target.startswith("plots/"):
                assert files[f"generated/guides/{target}"].lstrip().startswith("<svg"), target
            elif target == c.CALCULATOR:
                assert (ROOT / "docs" / "calculator.md").is_file()
            elif target.startswith("../"):
                assert target in c.SIBLING_PAGES, (path, target)
            else:
                assert f"generated/guides/{target}" in files, (path, target)


def commands(text: str) -> list[str]:
    """The full commands a page gives: in its reproduction section and in code blocks."""
    spans = re.findall(r"`(commatlas [^`]+)`", text[text.index("## Reproduce these numbers") :])
    lines = [x.strip() for x in text.splitlines() if x.strip().startswith("commatlas ")]
    return [x for x in spans + lines if "--" in x and "..." not in x]


def test_every_command_shown_parses(files) -> None:
    from commatlas.cli import build_parser

    shown = [cmd for path, text in files.items() if path.endswith(".md") for cmd in commands(text)]
    assert len(shown) >= 6
    for cmd in shown:
        build_parser().parse_args(shlex.split(cmd)[1:])
    named = build_parser().parse_args(  # the calibrate guide names this flag
        ["predict", "--workload", "resnet50", "--batch-size", "1", "--nodes", "1",
         "--profile", "x.yaml"])  # fmt: skip
    assert named.profile == "x.yaml"


# --- 1. choose-allreduce --------------------------------------------------------------------
def test_allreduce_crossover_and_table_row_from_hand_formulas(files) -> None:
    a, b, g = hdr()
    p, lg = 64, 6
    ring = lambda n: 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g  # noqa: E731
    rd = lambda n: lg * (a + n * b + n * g)  # noqa: E731
    hd = lambda n: 2 * lg * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g  # noqa: E731
    cross = (2 * lg * a - lg * a) / (lg * (b + g) - (2 * (p - 1) / p * b + (p - 1) / p * g))
    assert close(ar.crossover("hdr", p), cross)
    hdr_table = page(files, "choose-allreduce").split("**InfiniBand HDR")[1].split("## Nodes")[0]
    row = row_of(hdr_table, "64")
    for cell in (c.format_bytes(cross), f"recursive doubling, {c.format_seconds(rd(1e3))}",
                 c.format_seconds(ring(1e3)), f"halving-doubling, {c.format_seconds(hd(1e8))}",
                 c.format_seconds(ring(1e8))):  # fmt: skip
        assert f"| {cell} |" in row
    # p = 24 on 10 GbE: recursive doubling (4 rounds + fold-in) against the double binary tree.
    link = get_link("10gbe")
    a, b = link.alpha_s, link.beta_s_per_byte
    assert close(ar.crossover("10gbe", 24), (10 * a - 6 * a) / ((6 * b + 5 * g) - (2 * b + g)))


def test_hierarchical_row_from_hand_formula(files) -> None:
    a, b, g = hdr()
    nv = get_link("nvlink4")
    ai, bi, p, k, n = nv.alpha_s, nv.beta_s_per_byte, 16, 8, scenario.MESSAGE_BYTES
    t = (2 * (k - 1) * ai + 2 * (k - 1) / k * n * bi + (k - 1) / k * n * g
         + 2 * (p / k - 1) * a + 2 * (p / k - 1) / p * n * b + (p / k - 1) / p * n * g)  # fmt: skip
    hd = 2 * 4 * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g
    row = row_of(page(files, "choose-allreduce"), "16 | 2")
    assert (
        f"| {c.format_seconds(t)} | halving-doubling, {c.format_seconds(hd)} | {hd / t:.1f}× |"
        in row
    )


@pytest.fixture(scope="module")
def brute_winners() -> dict[tuple[str, int], list[str]]:
    """Fastest flat algorithm per (network, p) at every grid size, straight from costmodels."""
    import numpy as np

    from costmodels.dp.collective_time import allreduce_time

    out = {}
    for network in ar.NETWORKS:
        values = c.network_values(network)
        for p in ar.WORKERS:
            times = []
            for algo in ar.FLAT:
                g = ar.grid_width(p) if algo == "torus2d" else 8
                ok = algo != "torus2d" or g > 1
                t = allreduce_time(algo, **{**values, "p": p, "g": g, "n": ar.SIZES})
                times.append(t if ok else np.full(ar.SIZES.shape, np.inf))
            times = np.array(times)
            first = np.argmax(times <= times.min(axis=0) * (1 + 1e-9), axis=0)
            out[network, p] = [ar.FLAT[i] for i in first]
    return out


def test_allreduce_claims_hold(files, brute_winners) -> None:
    text = page(files, "choose-allreduce")
    everywhere = {w for ws in brute_winners.values() for w in ws}
    assert "tree" not in everywhere and "binomial tree never wins" in text
    assert all(ws[0] == "recursive-doubling" for ws in brute_winners.values())
    powers = [p for p in ar.WORKERS if p & (p - 1) == 0 and p > 2]
    assert all(brute_winners[n, p][-1] == "halving-doubling" for n in ar.NETWORKS for p in powers)
    ring_p = sorted({p for (_, p), ws in brute_winners.items() if "ring" in ws})
    assert f"The plain ring is fastest only at p = {', '.join(map(str, ring_p))} " in text
    assert brute_winners["hdr", 2][-1] == "ring" and ar.segments("hdr", 2)[-1].names[:3] == (
        "ring", "halving-doubling", "double-binary-tree")  # fmt: skip
    lo, hi = ar.ratio_range("100gbe", "10gbe")
    assert 9 < lo <= hi < 10.5 and f"{lo:.1f}–{hi:.1f}× larger" in text
    lo, hi = ar.ratio_range("hdr", "10gbe")
    alpha_beta = ar.alpha_beta("hdr") / ar.alpha_beta("10gbe")
    assert lo <= alpha_beta * 1.01 and hi >= alpha_beta * 0.95 and f"{lo:.2f}–{hi:.2f}×" in text
    for p in ar.HIER_WORKERS:  # hierarchical wins from its start on, flat algorithms below
        start = ar.hierarchical_start(p)
        assert ar.winner("hdr", p, start * 1.01, True)[0] == "hierarchical"
        assert ar.winner("hdr", p, start * 0.99, True)[0] != "hierarchical"


# --- 2. compression-pays --------------------------------------------------------------------
def test_fp16_row_from_hand_formulas(files, tax) -> None:
    from costmodels.dp.compression_cost import kernel_fit

    a, b, g = hdr()
    p, n = cp.P, scenario.MESSAGE_BYTES
    dense = 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g
    half = n / 2
    comm = 2 * (p - 1) * a + 2 * (p - 1) / p * half * b + (p - 1) / p * half * g
    fit = kernel_fit("fp16_cast_s")
    rate = fit.c_s_per_byte  # measured on an H200, the scenario's GPU: unscaled
    assert close(rate, float(scenario.symbol_values("fp16-comm", p, n)["gamma_c"]))
    compute = fit.t0_s + rate * n
    # Closed form: the beta term saves (p-1)/p n bytes; the fixed part costs n gamma_c (the
    # cast) less the reduction of the n/2 bytes not sent, (p-1)/p (n/2) gamma.
    closed = (p - 1) / p * n / (n * rate - (p - 1) / p * half * g)
    row = row_of(page(files, "compression-pays"), "[Mixed-precision (FP16) gradient "
                 "communication](../../records/fp16-comm.md)", "`fp16`")  # fmt: skip
    assert (
        f"| {c.format_bytes(2 * (p - 1) / p * half)} | below {c.format_bandwidth(closed)} |" in row
    )
    assert f"| {c.format_ms(dense)} | {c.format_ms(comm)} + {c.format_ms(compute)} |" in row
    (fp16,) = [r for r in cp.rows(tax) if r.spec == "fp16"]
    assert close(fp16.dense_s["hdr"], dense) and close(sum(fp16.compressed_s["hdr"]),
                                                       comm + compute)  # fmt: skip


def test_closed_breakeven_equals_compression_breakeven(tax) -> None:
    """The guide evaluates the closed form numerically; the project's symbolic solve agrees."""
    from costmodels.dp.compression_breakeven import breakeven

    for spec in ("signsgd", "fp16", "qsgd:8"):
        (row,) = [r for r in cp.rows(tax) if r.spec == spec]
        ((_, record_id, variant),) = [x for x in cp.COMPRESSORS if x[0] == spec]
        values = {k: float(v) for k, v in scenario.symbol_values(
            record_id, cp.P, scenario.MESSAGE_BYTES, tax.records[record_id].properties.bits
        ).items()}  # fmt: skip
        exact = breakeven(record_id, variant, values)
        assert row.closed[1] == exact.pays_below
        assert (
            close(row.closed[0], exact.bandwidth_Bps, 1e-6) or row.closed[0] == exact.bandwidth_Bps
        )


def test_compression_claims_hold(files, tax) -> None:
    import costmodels

    text = page(files, "compression-pays")
    rows = cp.rows(tax)
    for row in rows:  # the verdicts on links with the scenario's alpha follow the break-even
        for link in ("hdr", "nvlink4"):
            slower = c.achievable_Bps(link) < row.full[0]
            assert cp.pays(row, link) == (slower if row.full[1] else not slower), row.spec
    never = [r for r in rows if r.closed[0] == 0]
    assert {r.spec for r in never} == {"qsgd:8", "terngrad", "efsignsgd", "onebit"}
    ring_bytes = 2 * (cp.P - 1) / cp.P * scenario.MESSAGE_BYTES
    for r in never:  # "they are all-gathered" and send at least the dense ring's bytes
        assert "allgather" in costmodels.get(r.record_id).default_variant
        assert r.wire_bytes >= 0.99 * ring_bytes
    (topk,) = [r for r in rows if r.spec == "topk:0.01"]
    assert cp.facts(tax)["selection"] == [f"`topk:0.01` ({c.format_bandwidth(topk.full[0])})"]
    symbols = {s.name for s in costmodels.get("topk-sparsification").expr.free_symbols}
    assert "gamma_c" not in symbols  # its cost model leaves the selection out, as stated
    assert not cp.pays(topk, "nvlink4") and cp.pays(topk, "hdr")
    kept = cp.kept_ranges()
    assert kept[True][0] >= 0.9 and kept[False][1] < 0.5
    assert f"keeps {kept[True][0]:.0%}–{kept[True][1]:.0%} of its BSP gain" in text


def test_overlap_row_from_plain_predict(files) -> None:
    from costmodels.dp.predict import Cluster, Method, predict
    from costmodels.workloads import get_workload

    workload = get_workload("bert-large")
    profile = workload.profile("fp32")
    cluster = Cluster(8, 8, 360e9, 2e-6, 22.5e9, 2e-6)
    times = [predict(workload, 32, profile.fwd_s + profile.bwd_s, cluster,
                     Method("allreduce", s, "ring", compression=k)).iteration_time_s
             for s in ("bsp", "fusion") for k in ("none", "fp16")]  # fmt: skip
    row = row_of(page(files, "compression-pays"), "BERT-Large | InfiniBand HDR", "`fp16`")
    cells = " | ".join(c.format_ms(t) for t in times)
    assert f"| `fp16` | {cells} | {c.format_ms(times[0] - times[1])} |" in row


# --- 3. scheduling-overlap ------------------------------------------------------------------
def test_scheduling_row_from_plain_predict_and_cli(files) -> None:
    from commatlas.cli import build_parser
    from commatlas.predict_cluster import cluster_of_flags
    from costmodels.dp.predict import Method, predict
    from costmodels.workloads import get_workload

    text = page(files, "scheduling-overlap")
    (cmd,) = [x for x in commands(text) if x.startswith("commatlas predict ")]
    args = build_parser().parse_args(shlex.split(cmd)[1:])
    cluster = cluster_of_flags(args)
    assert args.collective == "ring"  # the guide prices the textbook ring
    assert replace(cluster, gpu=None, nics_per_node=None) == c.cluster("hdr", 8)
    workload = get_workload("resnet50")
    profile = workload.profile("fp32")
    step = profile.fwd_s + profile.bwd_s
    preds = {s: predict(workload, 64, step, cluster, Method("allreduce", s, "ring"))
             for s in so.SCHEDULES}  # fmt: skip
    case = so.Case("resnet50", "hdr", 8)
    for s, pred in preds.items():
        assert close(so.prediction(case, s).iteration_time_s, pred.iteration_time_s, 1e-9)
    row = row_of(text.split("## ResNet-50")[1].split("## BERT-Large")[0], "InfiniBand HDR | 64")
    best = min(preds.values(), key=lambda p: p.iteration_time_s)
    a, b = get_link("hdr").alpha_s, get_link("hdr").beta_s_per_byte
    whole = 2 * 63 * a + 2 * 63 / 64 * workload.params * 4 * b
    assert row.startswith(f"| InfiniBand HDR | 64 | {whole / profile.bwd_s:.2f} | ")
    assert " | ".join(c.format_ms(p.iteration_time_s) for p in preds.values()) in row
    assert row.endswith(f"| {step / best.iteration_time_s:.2f} | "
                        f"{c.format_ms(best.iteration_time_s - step)} |")  # fmt: skip


def test_scheduling_claims_hold(files) -> None:
    text = page(files, "scheduling-overlap")
    f = so.facts()
    multi = [x for x in so.cases() if x.nodes > 1]
    t = {(x, s): so.prediction(x, s).iteration_time_s for x in so.cases() for s in so.SCHEDULES}
    assert f["wfbp_slower"] == sum(t[x, "wfbp"] > t[x, "bsp"] for x in multi)
    assert f"WFBP is slower than BSP in {f['wfbp_slower']} of the {len(multi)}" in text
    assert all(t[x, "mg-wfbp"] <= min(t[x, "wfbp"], t[x, "bsp"]) * (1 + 1e-9) for x in so.cases())
    assert "never slower than WFBP or BSP" in text
    fast = [x for x in multi if x.network == "hdr"]
    assert all(so.comm_ratio(x) < 1 for x in fast) and f["n_fast"] == len(fast)
    assert all(so.comm_ratio(x) > 1 for x in multi if x.network == "10gbe")
    for x in multi:  # exposed communication is what the iteration adds to compute
        pred = so.prediction(x, "bsp")
        assert close(pred.exposed_communication_s, pred.iteration_time_s - pred.compute_s, 1e-9)
    assert f"no schedule exceeds {f['slow_best']:.0%} efficiency" in text


def test_affine_comm_equals_message_seconds() -> None:
    from costmodels.dp.predict import Method, message_seconds

    method = Method("allreduce", "mg-wfbp", "ring")  # affine: the textbook ring
    for network, nodes in (("10gbe", 4), ("hdr", 1)):
        comm = so.affine_comm(method, network, nodes)
        for n in (4.0, 3e5, 4e8):
            assert close(comm(n), message_seconds(method, c.cluster(network, nodes), n), 1e-9)


# --- 4. llm-parallelism ---------------------------------------------------------------------
def test_llm_best_row_from_predict_step_and_cli(files) -> None:
    from commatlas.cli import build_parser
    from commatlas.llm_commands import _cluster, _shape
    from costmodels.llm.megatron_table import selene_cluster
    from costmodels.llm.step import predict_step

    text = page(files, "llm-parallelism")
    best = llm.plans("GPT-3 175B", 1024)[0]
    p = predict_step(llm.gpt3_175b(), best.layout, selene_cluster())
    lay = best.layout
    assert close(p.bubble_fraction, (lay.pp - 1) / (lay.interleave * lay.micro_batches))
    row = row_of(text, "GPT-3 175B | 1024")
    assert row == (f"| GPT-3 175B | 1024 | {llm.layout_text(lay)} | {p.iteration_time_s:.3g} | "
                   f"{p.model_flops_utilization:.0%} | {p.memory_per_gpu_bytes / 2**30:.1f} | "
                   f"{p.bubble_fraction:.1%} | {p.tp_comm_s:.3g} | {p.pp_comm_s:.3g} | "
                   f"{p.dp_comm_s:.3g} | {p.exposed_comm_s:.3g} |")  # fmt: skip
    gpt, llama = [x for x in commands(text) if x.startswith("commatlas plan-llm")]
    args = build_parser().parse_args(shlex.split(gpt)[1:])
    assert _shape(args) == llm.gpt3_175b() and _cluster(args) == selene_cluster()
    assert args.gpus == 1024 and args.global_batch == llm.SETUPS["GPT-3 175B"][3]
    args = build_parser().parse_args(shlex.split(llama)[1:])
    assert _shape(args) == llm.llama_70b() and _cluster(args) == llm.h100_cluster()
    assert (args.gpus, args.global_batch) == (llm.TP_STUDY[1], llm.SETUPS["Llama 3 70B"][3])


def test_llm_claims_hold(files) -> None:
    from costmodels.llm.step import predict_step
    from costmodels.workloads import get_workload

    text = page(files, "llm-parallelism")
    f = llm.facts()
    study = {tp: p for tp, _, _, _, p in llm.tp_study()}
    shape, cluster = llm.llama_70b(), llm.h100_cluster()
    for tp in (8, 16):  # TP across two nodes: recomputed straight from predict_step
        assert close(
            study[tp].iteration_time_s,
            predict_step(shape, llm.tp_layout(tp), cluster).iteration_time_s,
        )
    assert f["inside"] == 8 and f["across"] == 16
    # NCCL spreads the 16-GPU group over every NIC of its two nodes, still >2x NVLink's time
    assert study[16].tp_comm_s > 2 * study[8].tp_comm_s
    assert study[16].iteration_time_s > study[8].iteration_time_s
    assert f"the step grows from {f['step'][0]:.3g} s to {f['step'][1]:.3g} s" in text
    best = llm.plans(*llm.TP_STUDY)[0].prediction.iteration_time_s
    assert all(p.iteration_time_s >= best or not p.fits for p in study.values())
    assert f["plain_dp_fits"] == 0 and "so no fitting layout is plain data parallelism" in text
    params = get_workload("llama3-70b").params
    assert close(llm.replicated_state("Llama 3 70B"), 16 * params, 1e-3)
    assert close(f["link_ratio"], 450e9 / 50e9)
    zero = llm.zero_rows("GPT-3 175B", 64)
    # the plan's fastest layout's ZeRO stage shows the shortest step (ties at 3 digits allowed)
    shown = {r[0]: float(r[2]) if r[2] != "—" else math.inf for r in zero}
    assert shown[str(llm.plans("GPT-3 175B", 64)[0].layout.zero)] == min(shown.values())


# --- 5. calibrate-cluster -------------------------------------------------------------------
def measured_us(name: str, size: int) -> float:
    """The out-of-place time column of one row, read from the raw log text by hand."""
    for line in (cal.DATA / name).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields[:1] == [str(size)]:
            return float(fields[-8])  # out-of-place time: 8 columns from the right
    raise AssertionError(f"{size} not in {name}")


def test_calibration_predictions_from_hand_formulas(files) -> None:
    text = page(files, "calibrate-cluster")
    nv, ib, n = get_link("nvlink3"), get_link("hdr"), 2**30
    fit = cal.fit(cal.ONE_NODE)
    measured = measured_us(cal.ONE_NODE, n) * 1e-6
    nominal = 14 * nv.alpha_s + 2 * 7 / 8 * n * nv.beta_s_per_byte
    calibrated = 14 * fit.alpha_s + 2 * 7 / 8 * n / fit.bandwidth_Bps
    row = row_of(text, "8 GPUs, one node, ring | 1 GiB")
    assert (
        f"| {c.format_seconds(measured)} | {c.format_seconds(nominal)} "
        f"({nominal / measured - 1:+.0%}) "
        f"| {c.format_seconds(calibrated)} ({calibrated / measured - 1:+.0%}) |"
    ) in row
    hier = (14 * nv.alpha_s + 2 * 7 / 8 * n * nv.beta_s_per_byte
            + 2 * ib.alpha_s + 2 * 1 / 16 * n * ib.beta_s_per_byte)  # fmt: skip
    measured = measured_us(cal.TWO_NODES, n) * 1e-6
    row = row_of(text, "16 GPUs, two nodes, hierarchical | 1 GiB")
    assert f"| {c.format_seconds(hier)} ({hier / measured - 1:+.0%}) |" in row
    rows = [r for r in cal.predictions() if r["n"] == n and "two nodes" in r["case"]]
    errors = {k: abs(rows[0][k] / measured - 1) for k in ("nominal", "calibrated", "fit")}
    assert min(errors, key=errors.get) == "fit"  # "for large messages, price ... the same shape"


def test_calibration_fits_and_claims(files) -> None:
    text = page(files, "calibrate-cluster")
    for name in cal.LOGS:
        fit, ms = cal.fit(name), cal.measurements(name)
        largest = max(ms, key=lambda m: m.bytes)
        assert abs(fit.bandwidth_Bps / largest.busbw_Bps - 1) < 0.01  # "within 0.7 %"
        assert fit.points == sum(m.bytes > 0 for m in ms)
    row = row_of(text, "`superbench_8xa100_allreduce.txt`")
    fit = cal.fit(cal.ONE_NODE)
    assert f"| {fit.alpha_s * 1e6:.3g} | {fit.bandwidth_Bps / 1e9:.4g} |" in row
    inter = cal.profile().levels["inter"]
    assert close(inter.bandwidth_Bps, cal.fit(cal.TWO_NODES).bandwidth_Bps / 8)
    assert "created:" not in cal.profile_yaml() and "alpha_s:" in cal.profile_yaml()


def test_binomial_tree_links_its_own_variant(tax) -> None:
    """Issue 17, item 12: the binomial tree's line named the double binary tree's record alone;
    it now names its variant and the reduce + broadcast records it is made of."""
    from commatlas.docs_site.guides import choose_allreduce

    (line,) = [x for x in choose_allreduce.formulas(tax) if x.startswith("- **binomial tree**")]
    assert "variant `binary-tree` of [Double binary tree all-reduce]" in line
    assert "(../../records/reduce.md)" in line and "(../../records/broadcast.md)" in line
