"""Communication per parallel dimension and pipeline schedules (costmodels/llm/communication.py,
costmodels/llm/pipeline.py).

The communication formulas are held against volumes typed here from the papers (Narayanan et al.
SC'21: TP 8bsh(t-1)/t per layer per micro-batch, PP bsh/t with scatter/gather; Rajbhandari et al.
2020: ZeRO-1/2 = all-reduce volume, ZeRO-3 = 1.5x) with latency set to zero, so the comparison is
exact up to float rounding (rel=1e-12). Pipeline times are held against a discrete-event
simulation of each schedule, in exact fractions; with a boundary message of c seconds the same
simulation gives the transfer terms of the ``gpipe`` model (exact) and ``megatron-3d`` (bound).
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial
from itertools import product

import pytest

import costmodels
from costmodels.dp.collective_time import allreduce_time
from costmodels.hardware import get_gpu
from costmodels.llm import communication
from costmodels.llm.communication import (
    CommBreakdown,
    group_span,
    layer_parameters,
    stage_parameters_per_gpu,
)
from costmodels.llm.moe_routing import busiest_rank_factor
from costmodels.llm.pipeline import bubble_fraction, pipeline_time
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

# The volumes of the papers are those of the textbook collectives (ring, hierarchical, pairwise
# all-to-all), the step model's ``nccl=False`` path; the NCCL path (the default) prices the same
# volumes with NCCL's algorithms: tests/costmodels/test_llm_nccl_groups.py.
communication_breakdown = partial(communication.communication_breakdown, nccl=False)
allreduce_s = partial(communication.allreduce_s, nccl=False)

INTRA, INTER = 300e9, 25e9
GPT3 = TransformerShape(layers=96, hidden=12288, heads=96, seq_len=2048)
LLAMA2_7B = TransformerShape(
    layers=32, hidden=4096, heads=32, seq_len=4096, ffn=11008, vocab=32000,
    gated_mlp=True, tied_embeddings=False,
)  # fmt: skip


def cluster(latency: float = 0.0, gpus_per_node: int = 8) -> LLMCluster:
    return LLMCluster(get_gpu("a100-80gb"), gpus_per_node, INTRA, INTER, latency, latency)


# --- placement ------------------------------------------------------------------------------
def test_group_span_follows_tp_innermost_placement() -> None:
    assert group_span(1, 8, 64, 8).nodes == 1  # TP 8 fills one node
    dp = group_span(4, 4, 16, 8)  # tp=4: DP ranks 0,4 | 8,12 -> two nodes, two members each
    assert (dp.nodes, dp.per_node) == (2, 2)
    assert group_span(8, 8, 64, 8).nodes == 8  # DP across nodes, one member per node
    assert group_span(1, 3, 6, 4).per_node == 0  # {3,4,5} straddles 4|8 unevenly


def test_spanning_group_with_several_members_per_node_is_hierarchical() -> None:
    c, n = cluster(5e-6), 1e9
    want = allreduce_time(
        "hierarchical", p=4, g=2, n=n, gamma=0.0, alpha=5e-6, beta=1 / INTER,
        alpha_intra=5e-6, beta_intra=1 / INTRA,
    )  # fmt: skip
    assert allreduce_s(n, group_span(4, 4, 16, 8), c) == pytest.approx(float(want))
    ring_inside = allreduce_time("ring", p=8, n=n, gamma=0.0, alpha=5e-6, beta=1 / INTRA)
    assert allreduce_s(n, group_span(1, 8, 8, 8), c) == pytest.approx(float(ring_inside))


# --- parameters (the DP volume) -------------------------------------------------------------
def test_gpt_parameters_match_narayanan_eq2() -> None:
    # P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) = 12lh^2 + 13lh + (V+s)h (Narayanan Eq. 2).
    s = GPT3
    dense, expert = layer_parameters(s)
    assert (dense, expert) == (12 * s.hidden**2 + 13 * s.hidden, 0)
    total, _ = stage_parameters_per_gpu(s, Layout(tp=1, pp=1, dp=1, global_batch=1))
    n, h, v, q = s.layers, s.hidden, s.vocab, s.seq_len
    assert total == 12 * n * h**2 + 13 * n * h + (v + q) * h
    assert total / 1e9 == pytest.approx(174.6, abs=0.1)  # the "175B" GPT-3 shape


def test_llama_parameters_counted_tensor_by_tensor() -> None:
    h, f, v, kv = 4096, 11008, 32000, 4096
    per_layer = h * h + h * kv + h * kv + h * h + 3 * h * f + 2 * h  # q,k,v,o, gate/up/down, norms
    assert layer_parameters(LLAMA2_7B) == (per_layer, 0)
    total, _ = stage_parameters_per_gpu(LLAMA2_7B, Layout(tp=1, pp=1, dp=1, global_batch=1))
    assert total == 32 * per_layer + 2 * v * h  # untied input and output embeddings
    gqa = TransformerShape(layers=1, hidden=8192, heads=64, seq_len=8, kv_heads=8, gated_mlp=True)
    assert (
        layer_parameters(gqa)[0] == 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 4 * 8192 + 2 * 8192
    )


def test_stage_parameters_split_by_tp_and_pp() -> None:
    layout = Layout(tp=8, pp=8, dp=1, global_batch=8)
    dense, _ = stage_parameters_per_gpu(GPT3, layout)
    per_layer = 12 * 12288**2 + 13 * 12288
    first = (51200 + 2048) * 12288  # embedding + learned positions on the first stage
    assert dense == pytest.approx((12 * per_layer + first) / 8)


# --- TP -------------------------------------------------------------------------------------
def test_tp_volume_is_8bsh_per_layer_per_microbatch() -> None:
    layout = Layout(tp=8, pp=8, dp=1, global_batch=16, micro_batch=2)
    got = communication_breakdown(GPT3, layout, cluster()).tp
    b, s, h, t, m = 2, 2048, 12288, 8, 8
    elements = (96 // 8) * 8 * b * s * h * (t - 1) / t  # per micro-batch, per device
    assert got == pytest.approx(m * elements * 2 / INTRA, rel=1e-12)


def test_sequence_parallel_same_time_and_full_recompute_adds_half() -> None:
    base = dict(tp=4, pp=2, dp=1, global_batch=8)
    c = cluster(3e-6)
    plain = communication_breakdown(GPT3, Layout(**base), c).tp
    sp = communication_breakdown(GPT3, Layout(**base, sequence_parallel=True), c).tp
    full = communication_breakdown(GPT3, Layout(**base, recompute="full"), c).tp
    assert sp == pytest.approx(plain, rel=1e-12)  # RS + AG is a ring all-reduce, latency too
    assert full == pytest.approx(1.5 * plain, rel=1e-12)  # 6 all-reduces instead of 4


# --- PP -------------------------------------------------------------------------------------
def test_pp_point_to_point_with_scatter_gather_and_interleaving() -> None:
    layout = Layout(tp=8, pp=4, dp=1, global_batch=8)  # one stage per node: boundaries on IB
    bsh2 = 2048 * 12288 * 2
    gather = 7 / 8 * bsh2 / INTRA  # receiver's ring all-gather over NVLink
    want = 2 * 8 * (bsh2 / 8 / INTER + gather)
    assert communication_breakdown(GPT3, layout, cluster()).pp == pytest.approx(want, rel=1e-12)
    naive = communication_breakdown(GPT3, layout, cluster(), pp_scatter_gather=False).pp
    assert naive == pytest.approx(2 * 8 * bsh2 / INTER, rel=1e-12)
    inter = Layout(tp=8, pp=4, dp=1, global_batch=8, interleave=2, schedule="interleaved")
    assert communication_breakdown(GPT3, inter, cluster()).pp == pytest.approx(2 * want)
    assert (
        communication_breakdown(GPT3, Layout(tp=8, pp=1, dp=1, global_batch=8), cluster()).pp == 0
    )


# --- DP / ZeRO ------------------------------------------------------------------------------
def test_zero_volumes_follow_rajbhandari() -> None:
    c = cluster()
    kw = dict(tp=8, pp=1, dp=4, global_batch=4)
    ar = communication_breakdown(GPT3, Layout(**kw), c).dp
    params, _ = stage_parameters_per_gpu(GPT3, Layout(**kw))
    assert ar == pytest.approx(2 * 3 / 4 * 2 * params / INTER, rel=1e-12)  # one rank per node
    for stage in (1, 2):
        assert communication_breakdown(GPT3, Layout(**kw, zero=stage), c).dp == pytest.approx(ar)
    assert communication_breakdown(GPT3, Layout(**kw, zero=3), c).dp == pytest.approx(1.5 * ar)
    fp32 = communication_breakdown(GPT3, Layout(**kw), c, grad_bytes=4).dp
    assert fp32 == pytest.approx(2 * ar)


def test_dp_overlap_hides_up_to_the_backward_window() -> None:
    kw = dict(tp=8, pp=1, dp=4, global_batch=4)
    comm = communication_breakdown(GPT3, Layout(**kw), cluster()).dp
    part = communication_breakdown(GPT3, Layout(**kw), cluster(), bwd_s_per_microbatch=comm / 3)
    assert part.exposed_of("dp") == pytest.approx(2 * comm / 3)
    whole = communication_breakdown(GPT3, Layout(**kw), cluster(), bwd_s_per_microbatch=10 * comm)
    assert whole.exposed_of("dp") == 0 and whole.dp_hidden == pytest.approx(comm)
    z3 = communication_breakdown(GPT3, Layout(**kw, zero=3), cluster(), fwd_s_per_microbatch=1e3)
    assert z3.exposed_of("dp") == 0  # FSDP prefetch under a long forward


# --- CP and EP ------------------------------------------------------------------------------
def test_cp_exchanges_kv_twice_gathered_once_reduced() -> None:
    gqa = TransformerShape(layers=8, hidden=8192, heads=64, seq_len=8192, kv_heads=8)
    layout = Layout(tp=8, pp=1, dp=1, cp=2, global_batch=2)  # CP pairs across two nodes
    kv = 2 * 8192 * 2 * 128 * 1  # K and V, whole sequence, bf16, one KV head per TP rank
    want = 2 * 8 * 3 * (1 / 2) * kv / INTER  # m=2, 8 layers, AG + AG + RS, (c-1)/c
    got = communication_breakdown(gqa, layout, cluster())
    assert got.cp == pytest.approx(want, rel=1e-12) and got.cp_hidden == 0
    assert communication_breakdown(gqa, Layout(tp=8, pp=1, dp=2, global_batch=2), cluster()).cp == 0


def test_ep_four_all_to_alls_of_routed_tokens() -> None:
    moe = TransformerShape(layers=4, hidden=4096, heads=32, seq_len=4096, experts=8, top_k=2)
    layout = Layout(tp=1, pp=1, dp=8, ep=8, global_batch=8)
    routed = 4096 * 2 * 4096 * 2  # tokens x top_k x h x bf16
    want = 1 * 4 * 4 * 7 / 8 * routed / INTRA
    # issue 39 item 5: every exchange waits for the busiest rank (a stated factor, or the chance
    # spread of 4096 x 2 x 8 routed copies over 8 ranks)
    got = communication_breakdown(moe, layout, cluster(), moe_imbalance=1.0)
    assert got.ep == pytest.approx(want, rel=1e-12)
    spread = communication_breakdown(moe, layout, cluster()).ep / want
    assert spread == pytest.approx(busiest_rank_factor(4096 * 2 * 8, 8), rel=1e-12)
    _, expert = stage_parameters_per_gpu(moe, layout)
    all_experts = 4 * 8 * (2 * 4096 * 4 * 4096 + 4 * 4096 + 4096)  # layers x experts x MLP
    assert expert == all_experts / 8  # each of the ep = 8 ranks holds one expert per layer
    with pytest.raises(ValueError, match="ep"):
        communication_breakdown(moe, Layout(tp=1, pp=1, dp=4, ep=8, global_batch=8), cluster())


def test_breakdown_totals() -> None:
    br = CommBreakdown(tp=1.0, pp=2.0, dp=3.0, cp=4.0, ep=5.0, dp_hidden=1.0, cp_hidden=0.5)
    assert (br.total, br.hidden, br.exposed) == (15.0, 1.5, 13.5)
    assert br.exposed_of("dp") == 2.0 and br.exposed_of("tp") == 1.0


# --- pipeline schedules ---------------------------------------------------------------------
def schedule_ops(schedule: str, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Each device's ops (kind, micro-batch, chunk) in Megatron-LM's order."""
    devices = []
    for d in range(p):
        if schedule == "gpipe":
            devices.append([("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)])
            continue
        total = m * v  # 1F1B is the v = 1 case of the interleaved order

        def fwd(k: int) -> tuple[str, int, int]:
            return "F", (k // (p * v)) * p + k % p, (k // p) % v

        def bwd(k: int) -> tuple[str, int, int]:
            return "B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v

        warm = min((p - d - 1) * 2 + (v - 1) * p if v > 1 else p - d - 1, total)
        ops = [fwd(k) for k in range(warm)]
        for i in range(total - warm):
            ops += [fwd(warm + i), bwd(i)]
        devices.append(ops + [bwd(k) for k in range(total - warm, total)])
    return devices


def simulate(
    schedule: str, p: int, m: int, v: int, tf: list, tb: list, lag: Fraction = Fraction(0)
) -> Fraction:
    """Makespan: an op starts when its device is free and its producer has finished, ``lag``
    (one boundary message, alpha + n beta) later when the producer ran on another device."""
    ops, done = schedule_ops(schedule, p, m, v), {}
    free, nxt, last = [Fraction(0)] * p, [0] * p, p * v - 1
    progressed = True
    while progressed:
        progressed = False
        for d in range(p):
            while nxt[d] < len(ops[d]):
                kind, mb, chunk = ops[d][nxt[d]]
                stage = chunk * p + d
                if kind == "F":
                    dep = ("F", stage - 1, mb) if stage > 0 else None
                else:
                    dep = ("B", stage + 1, mb) if stage < last else ("F", stage, mb)
                if dep is not None and dep not in done:
                    break
                remote = dep is not None and dep[1] % p != d  # stage s runs on device s % p
                start = max(free[d], done[dep] + (lag if remote else 0) if dep else Fraction(0))
                free[d] = done[(kind, stage, mb)] = start + (tf[d] if kind == "F" else tb[d]) / v
                nxt[d] += 1
                progressed = True
    assert all(nxt[d] == len(ops[d]) for d in range(p)), "schedule deadlocked"
    return max(free)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "interleaved"])
def test_pipeline_time_matches_simulation(schedule: str) -> None:
    for p in range(1, 7):
        for m in range(1, 7):
            for v in [1, 2, 3] if schedule == "interleaved" else [1]:
                if schedule == "interleaved" and m % p:
                    continue
                for tf, tb in [(Fraction(1), Fraction(2)), (Fraction(3), Fraction(1))]:
                    sim = simulate(schedule, p, m, v, [tf] * p, [tb] * p)
                    got = pipeline_time(float(tf), float(tb), p, m, v, schedule)
                    assert got == pytest.approx(float(sim), rel=1e-12), (schedule, p, m, v)
                    bubble = bubble_fraction(schedule, p, m, v)
                    assert float(sim) == pytest.approx(m * float(tf + tb) * (1 + bubble))


GPIPE_MODEL = costmodels.get("gpipe")
TIMES = [(Fraction(1), Fraction(2)), (Fraction(3), Fraction(1)), (Fraction(2), Fraction(5))]
LAGS = [Fraction(1, 7), Fraction(2), Fraction(50)]  # messages short and long against compute


def exposed_transfers(schedule: str, p: int, m: int, v: int, tf, tb, lag) -> float:
    """What the boundary messages add to the simulated step."""
    with_lag = simulate(schedule, p, m, v, [tf] * p, [tb] * p, lag)
    return float(with_lag - simulate(schedule, p, m, v, [tf] * p, [tb] * p))


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_gpipe_model_prices_transfers_as_each_schedule_runs(schedule: str) -> None:
    """Model time minus bubble equals the simulated makespan's growth, for every p, m, c."""
    for p in range(1, 7):
        for m in range(1, 3 * p + 2):
            for (tf, tb), lag in product(TIMES, LAGS):
                values = dict(p=p, m=m, t_f=float(tf), t_b=float(tb), alpha=float(lag),
                              beta=0.0, n=1.0)  # fmt: skip
                bubble = float(GPIPE_MODEL.evaluate(schedule, **{**values, "alpha": 0.0}))
                transfers = float(GPIPE_MODEL.evaluate(schedule, **values)) - bubble
                want = exposed_transfers(schedule, p, m, 1, tf, tb, lag)
                assert transfers == pytest.approx(want, rel=1e-12, abs=1e-12), (p, m, tf, lag)


def test_1f1b_exposes_more_transfers_than_fill_and_drain_by_hand() -> None:
    """p = 4, m = 8, c = 1: 2 [(p-1) + floor(7 * 3 / 4)] = 2 (3 + 5) = 16 messages, not 6."""
    values = dict(p=4, m=8, t_f=0.0, t_b=0.0, alpha=1.0, beta=0.0, n=1.0)
    assert float(GPIPE_MODEL.evaluate("1f1b", **values)) == 16.0
    assert float(GPIPE_MODEL.evaluate("gpipe", **values)) == 6.0
    assert exposed_transfers("1f1b", 4, 8, 1, Fraction(1), Fraction(2), Fraction(1)) == 16.0


def test_interleaved_transfer_term_is_a_lower_bound_of_the_simulation() -> None:
    model = costmodels.get("megatron-3d")
    for v, p in product((2, 3), range(1, 6)):
        for m in range(p, 4 * p + 1, p):
            for (tf, tb), lag in product(TIMES[:2], LAGS):
                values = dict(p=p, m=m, v=v, t_f=float(tf), t_b=float(tb), alpha=float(lag),
                              beta=0.0, n=1.0)  # fmt: skip
                bound = float(model.evaluate(**values) - model.evaluate(**{**values, "alpha": 0}))
                assert bound == pytest.approx(2 * (p * v - 1) * float(lag) * min(1, p - 1))
                assert exposed_transfers("interleaved", p, m, v, tf, tb, lag) >= bound - 1e-12


def test_slowest_stage_sets_the_pace() -> None:
    for p, m in [(4, 6), (6, 6), (3, 5)]:
        factors = [Fraction(1 + (d % 3), 2) for d in range(p)]  # 0.5, 1.0, 1.5, ...
        slow = max(factors)
        sim = simulate("1f1b", p, m, 1, [f * 1 for f in factors], [f * 2 for f in factors])
        bound = pipeline_time(1.0, 2.0, p, m, stage_imbalance=float(slow))
        assert m * 3 * slow <= sim <= bound + 1e-12  # slowest stage's own work <= T <= formula
        equal = simulate("1f1b", p, m, 1, [slow] * p, [2 * slow] * p)
        assert float(equal) == pytest.approx(bound)


def test_bubble_fraction_published_forms_and_errors() -> None:
    assert bubble_fraction("gpipe", 8, 32) == bubble_fraction("1f1b", 8, 32) == 7 / 32
    assert bubble_fraction("interleaved", 8, 32, v=4) == pytest.approx(7 / 128)
    assert bubble_fraction("1f1b", 1, 5) == 0.0
    with pytest.raises(ValueError, match="multiple of pp"):
        bubble_fraction("interleaved", 4, 6, v=2)
    with pytest.raises(ValueError, match="one model chunk"):
        pipeline_time(1.0, 2.0, 4, 8, v=2, schedule="1f1b")
    with pytest.raises(ValueError, match="unknown"):
        bubble_fraction("zero-bubble", 4, 8)
    with pytest.raises(ValueError, match="stage_imbalance"):
        pipeline_time(1.0, 2.0, 4, 8, stage_imbalance=0.5)
