"""Laws every schedule obeys on random gradient lists (hypothesis), and MG-WFBP against brute force.

Tolerances: schedules add the same numbers in different orders (a DP over prefix sums, a heap of
partitions), so comparisons between schedules allow a relative 1e-9, far above float rounding of
a few hundred additions and far below any real difference of the random inputs.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodels
from costmodels.gradients import Gradient
from costmodels.schedules import (
    bsp,
    bytescheduler,
    comm_from_model,
    fusion,
    local_sgd,
    mg_wfbp,
    mg_wfbp_plan,
    simulate,
    wfbp,
)

TOL = {"rel": 1e-9, "abs": 1e-12}
PROFILE = Path(costmodels.__file__).parent / "data" / "h200_profile.json"


@st.composite
def workloads(draw, max_tensors: int = 8, latency: bool = True):
    """(gradients, forward_s, backward_s, alpha, beta): a random ready-ordered gradient list."""
    count = draw(st.integers(0, max_tensors))
    backward = draw(st.floats(0, 10))
    fractions = sorted(draw(st.lists(st.floats(0, 1), min_size=count, max_size=count)))
    ready = [f * backward for f in fractions]
    if count and draw(st.booleans()):
        ready[-1] = backward  # the usual case: the input layer's gradient ends backward
    sizes = draw(st.lists(st.floats(0, 1e9), min_size=count, max_size=count))
    gradients = [Gradient(f"g{i}", s, r) for i, (s, r) in enumerate(zip(sizes, ready, strict=True))]
    alpha = draw(st.floats(0, 1)) if latency else 0.0
    beta = draw(st.floats(0, 1e-8))
    return gradients, draw(st.floats(0, 10)), backward, alpha, beta


def linear(alpha: float, beta: float):
    return lambda n: alpha + beta * n


def all_schedules(grads, forward, backward, comm, threshold: float, pieces: int) -> dict:
    """Every schedule; ByteScheduler cuts the largest tensor into ``pieces`` partitions."""
    partition = max(max((g.bytes for g in grads), default=0.0) / pieces, 1.0)
    return {
        "bsp": bsp(grads, forward, backward, comm),
        "wfbp": wfbp(grads, forward, backward, comm),
        "fusion": fusion(grads, forward, backward, comm, threshold_bytes=threshold),
        "mg-wfbp": mg_wfbp(grads, forward, backward, comm),
        "bytescheduler": bytescheduler(grads, forward, backward, comm, partition_bytes=partition),
        "local-sgd": local_sgd(grads, forward, backward, comm, H=3),
    }


@settings(max_examples=150, deadline=None)
@given(work=workloads(), threshold=st.floats(0, 2e9), pieces=st.integers(1, 20))
def test_timeline_laws_hold_for_every_schedule(work, threshold: float, pieces: int) -> None:
    grads, forward, backward, alpha, beta = work
    ready = {g.name: g.ready_s for g in grads}
    total = sum(g.bytes for g in grads)
    results = all_schedules(grads, forward, backward, linear(alpha, beta), threshold, pieces)
    for name, result in results.items():
        assert result.exposed_communication_s == result.iteration_time_s - result.compute_s, name
        assert result.compute_s == forward + backward, name
        assert result.iteration_time_s >= result.compute_s, name
        backward_start = next(s.start_s for s in result.timeline if s.kind == "backward")
        comms = sorted(result.comm_segments(), key=lambda s: s.start_s)
        for segment in comms:  # no message leaves before its tensors exist
            for tensor in segment.tensors:
                assert segment.start_s >= backward_start + ready[tensor], (name, segment)
        for first, second in itertools.pairwise(comms):  # one stream: no overlap
            assert second.start_s >= first.end_s, (name, first, second)
        assert sum(s.bytes for s in comms) == pytest.approx(total, rel=1e-9), name


@settings(max_examples=150, deadline=None)
@given(work=workloads(), threshold=st.floats(0, 2e9))
def test_schedule_orderings(work, threshold: float) -> None:
    grads, forward, backward, alpha, beta = work
    comm = linear(alpha, beta)
    time = {
        "bsp": bsp(grads, forward, backward, comm).iteration_time_s,
        "wfbp": wfbp(grads, forward, backward, comm).iteration_time_s,
        "fusion": fusion(
            grads, forward, backward, comm, threshold_bytes=threshold
        ).iteration_time_s,
        "mg": mg_wfbp(grads, forward, backward, comm).iteration_time_s,
    }
    assert time["mg"] <= min(time["wfbp"], time["bsp"], time["fusion"]) * (1 + 1e-9) + 1e-12
    zero = fusion(grads, forward, backward, comm, threshold_bytes=0)
    assert zero == wfbp(grads, forward, backward, comm)
    infinite = fusion(grads, forward, backward, comm, threshold_bytes=math.inf).iteration_time_s
    assert infinite <= time["bsp"]
    if not grads or grads[-1].ready_s == backward:
        assert infinite == time["bsp"]
    # Whole-tensor priority scheduling ends its messages when FIFO does (a busy single stream
    # finishes at the same time in any order) and, with the credit rule's wait bounded by the
    # backlog a FIFO stream would send first, never lets the next forward start later.
    priority = bytescheduler(grads, forward, backward, comm, partition_bytes=math.inf)
    assert priority.iteration_time_s <= time["wfbp"] * (1 + 1e-9) + 1e-12
    assert local_sgd(grads, forward, backward, comm, H=1).iteration_time_s == time["bsp"]


@settings(max_examples=100, deadline=None)
@given(work=workloads(latency=False))
def test_wfbp_never_slower_than_bsp_without_latency(work) -> None:
    """With comm = beta * n splitting a message costs nothing, so overlap can only help."""
    grads, forward, backward, _, beta = work
    comm = linear(0.0, beta)
    assert (
        wfbp(grads, forward, backward, comm).iteration_time_s
        <= bsp(grads, forward, backward, comm).iteration_time_s * (1 + 1e-9) + 1e-12
    )


def test_wfbp_can_lose_to_bsp_when_latency_dominates() -> None:
    """Why merging exists: ten tiny tensors ready at backward end pay ten latencies under WFBP."""
    grads = [Gradient(f"g{i}", 4, 1.0) for i in range(10)]
    comm = linear(1e-3, 1e-9)
    assert (
        wfbp(grads, 0.5, 1.0, comm).iteration_time_s > bsp(grads, 0.5, 1.0, comm).iteration_time_s
    )


def _fifo_end(groups, forward: float, comm) -> float:
    """Independent FIFO count for brute force: each group leaves at max(stream free, last ready)."""
    free = 0.0
    for group in groups:
        free = max(free, forward + group[-1].ready_s) + comm(sum(g.bytes for g in group))
    return free


def _all_contiguous_plans(grads):
    """All 2^(L-1) ways to cut the ready-ordered list into consecutive groups."""
    for cuts in itertools.product([False, True], repeat=max(len(grads) - 1, 0)):
        groups, current = [], [grads[0]]
        for grad, cut in zip(grads[1:], cuts, strict=True):
            if cut:
                groups.append(current)
                current = []
            current.append(grad)
        yield [*groups, current]


@settings(max_examples=200, deadline=None)
@given(work=workloads(max_tensors=8))
def test_mg_wfbp_equals_brute_force_over_all_contiguous_plans(work) -> None:
    grads, forward, backward, alpha, beta = work
    comm = linear(alpha, beta)
    expected = forward + backward
    if grads:
        best_end = min(_fifo_end(plan, forward, comm) for plan in _all_contiguous_plans(grads))
        expected = max(expected, best_end)
    assert mg_wfbp(grads, forward, backward, comm).iteration_time_s == pytest.approx(
        expected, **TOL
    )


def _full_scan_plan(grads, forward: float, comm) -> list[list[str]]:
    """The recurrence with every i tried (no early stop), ties to the smallest i."""
    prefix = [0.0]
    for grad in grads:
        prefix.append(prefix[-1] + grad.bytes)
    end, cut = [0.0] * (len(grads) + 1), [0] * (len(grads) + 1)
    for j in range(1, len(grads) + 1):
        ready = forward + grads[j - 1].ready_s
        finishes = [max(end[i], ready) + comm(prefix[j] - prefix[i]) for i in range(j)]
        end[j] = min(finishes)
        cut[j] = finishes.index(end[j])
    groups, j = [], len(grads)
    while j > 0:
        groups.append([g.name for g in grads[cut[j] : j]])
        j = cut[j]
    return groups[::-1]


@settings(max_examples=300, deadline=None)
@given(work=workloads(max_tensors=30), integer_sizes=st.booleans())
def test_mg_wfbp_early_stop_gives_the_full_scan_plan(work, integer_sizes: bool) -> None:
    """The downward scan with its early stop picks exactly the plan of the plain O(L^2) scan,
    ties included (integer sizes and zero beta make ties common)."""
    grads, forward, _, alpha, beta = work
    if integer_sizes:
        grads = [Gradient(g.name, float(int(g.bytes) % 4), g.ready_s) for g in grads]
        beta = 0.0 if beta < 5e-9 else 1.0
    comm = linear(alpha, beta)
    plan = [[g.name for g in group] for group in mg_wfbp_plan(grads, forward, comm)]
    assert plan == _full_scan_plan(grads, forward, comm)


@pytest.mark.parametrize("count", [1, 2, 5, 10, 12])
def test_mg_wfbp_brute_force_on_fixed_lists(count: int) -> None:
    """Deterministic lists up to L = 12 (2048 plans), with sizes spanning five decades."""
    grads = [
        Gradient(f"g{i}", 10 ** (2 + (i * 7) % 5), 0.01 * i + 0.003 * (i % 3)) for i in range(count)
    ]
    comm = linear(5e-3, 1e-7)
    best = min(_fifo_end(plan, 0.2, comm) for plan in _all_contiguous_plans(grads))
    plan = mg_wfbp_plan(grads, 0.2, comm)
    assert [g for group in plan for g in group] == grads
    assert _fifo_end(plan, 0.2, comm) == pytest.approx(best, **TOL)


@settings(max_examples=100, deadline=None)
@given(work=workloads(max_tensors=6), pieces=st.integers(1, 50))
def test_bytescheduler_partitions_respect_the_size(work, pieces: int) -> None:
    grads, forward, backward, alpha, beta = work
    size = max(max((g.bytes for g in grads), default=0.0) / pieces, 1.0)
    result = bytescheduler(grads, forward, backward, linear(alpha, beta), partition_bytes=size)
    sent = {g.name: 0.0 for g in grads}
    for segment in result.comm_segments():
        assert segment.bytes <= size
        sent[segment.tensors[0]] += segment.bytes
    assert sent == pytest.approx({g.name: g.bytes for g in grads}, rel=1e-9)
    forward_total = sum(s.duration_s for s in result.timeline if s.kind == "forward")
    assert forward_total == pytest.approx(forward, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(work=workloads(), factor=st.floats(1, 1e3))
def test_faster_network_never_slows_a_schedule(work, factor: float) -> None:
    grads, forward, backward, alpha, beta = work
    slow = all_schedules(grads, forward, backward, linear(alpha, beta), 5e8, 4)
    fast = all_schedules(grads, forward, backward, linear(alpha / factor, beta / factor), 5e8, 4)
    # ByteScheduler included: its stream is preemptive and the credit rule charges the backlog
    # of that stream, so a faster network cannot reorder partitions into a later finish.
    for name in ("bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler", "local-sgd"):
        assert fast[name].iteration_time_s <= slow[name].iteration_time_s * (1 + 1e-9) + 1e-12


def _profile(model: str) -> tuple[list[Gradient], float, float]:
    entry = json.loads(PROFILE.read_text())["models"][model]
    grads = [
        Gradient(g["name"], 4 * g["numel"], g["ready_s"]) for g in entry["gradients_in_ready_order"]
    ]
    return grads, entry["fwd_s"], entry["bwd_s"]


@pytest.mark.parametrize("model", ["resnet50-fp32", "vgg16-fp32", "bert-base-fp32"])
def test_measured_profiles_with_the_ring_allreduce_model(model: str) -> None:
    """Real ready times (H200 profile) and the ring all-reduce cost model at p = 16 over 10 GbE."""
    grads, forward, backward = _profile(model)
    comm = comm_from_model("ring-allreduce", p=16, alpha=5e-5, beta=1 / 1.25e9, gamma=0.0)
    times = {
        name: simulate(name, grads, forward, backward, comm, **options).iteration_time_s
        for name, options in [
            ("bsp", {}),
            ("wfbp", {}),
            ("fusion", {"threshold_bytes": 25 * 2**20}),
            ("mg-wfbp", {}),
            ("bytescheduler", {"partition_bytes": 4 * 2**20}),
            ("local-sgd", {"H": 8}),
        ]
    }
    assert times["mg-wfbp"] <= min(times["bsp"], times["wfbp"], times["fusion"]) * (1 + 1e-9)
    # A whole ring all-reduce of the model is ~2 n beta; BSP pays it after the compute.
    total = sum(g.bytes for g in grads)
    assert times["bsp"] == pytest.approx(forward + backward + comm(total), rel=1e-12)
    assert times["local-sgd"] == pytest.approx(forward + backward + comm(total) / 8, rel=1e-12)


@pytest.mark.parametrize(
    ("model_id", "variant"),
    [
        ("ring-allreduce", None),
        ("parameter-server", "separate"),
        ("parameter-server", "colocated"),
        ("local-sgd", None),
    ],
)
@pytest.mark.parametrize("size", [0.0, 1.0, 3.3e8])
def test_comm_from_model_matches_evaluate(model_id: str, variant: str | None, size: float) -> None:
    values = dict(p=8, S=4, H=5, alpha=7e-6, beta=2.5e-10, gamma=3e-11)
    model = costmodels.get(model_id)
    comm = comm_from_model(model_id, variant, **values)
    assert comm(size) == pytest.approx(float(model.evaluate(variant, n=size, **values)), rel=1e-12)


def test_comm_from_model_names_bad_values() -> None:
    with pytest.raises(ValueError, match=r"needs \['alpha'"):
        comm_from_model("ring-allreduce", p=2, beta=1, gamma=0)
    with pytest.raises(ValueError, match="n is the message size"):
        comm_from_model("ring-allreduce", n=1, p=2, alpha=1, beta=1, gamma=0)
    with pytest.raises(ValueError, match="beta must be finite"):
        comm_from_model("ring-allreduce", p=2, alpha=1, beta=-1, gamma=0)
