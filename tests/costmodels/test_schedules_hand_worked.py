"""Every schedule on a 3-tensor example worked out by hand, plus input errors and dispatch.

Example 1 (bsp, wfbp, fusion, mg-wfbp, local-sgd): forward 1 s, backward 3 s, tensors a, b, c of
100 bytes ready 0.5, 2 and 3 s into backward (1.5, 3 and 4 s from the forward start), and
comm(n) = 1 + 0.01 n seconds, so one tensor costs 2 s, two 3 s, three 4 s. The expected
timelines below are written out by hand from those numbers; the comments show the arithmetic.
Example 2 (bytescheduler) makes a bigger (300 bytes) and comm(n) = 0.5 + 0.01 n, so that
priority matters: c becomes ready while a is still being sent.
"""

from __future__ import annotations

import doctest
import importlib
import math

import pytest

from costmodels import schedules
from costmodels.gradients import Gradient
from costmodels.schedules import (
    bsp,
    bytescheduler,
    fusion,
    local_sgd,
    mg_wfbp,
    mg_wfbp_plan,
    simulate,
    wfbp,
)
from costmodels.schedules.fixed_costs import FixedCosts

F, B = 1.0, 3.0
EXAMPLE = [Gradient("a", 100, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]


def comm1(n: float) -> float:
    return 1 + 0.01 * n


EXAMPLE2 = [Gradient("a", 300, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]


def comm2(n: float) -> float:
    return 0.5 + 0.01 * n


def spans(result, kind: str = "comm") -> list[tuple[str, float, float]]:
    return [(s.name, s.start_s, s.end_s) for s in result.timeline if s.kind == kind]


def check(result, iteration: float, compute: float, communication: float) -> None:
    assert result.iteration_time_s == pytest.approx(iteration, rel=1e-12)
    assert result.compute_s == pytest.approx(compute, rel=1e-12)
    assert result.communication_s == pytest.approx(communication, rel=1e-12)
    assert result.exposed_communication_s == pytest.approx(iteration - compute, abs=1e-12)


def test_bsp_by_hand() -> None:
    result = bsp(EXAMPLE, F, B, comm1)
    # 300 bytes leave at backward end (4 s) and take 1 + 3 = 4 s.
    assert spans(result) == [("a..c (3 tensors)", 4.0, 8.0)]
    assert spans(result, "forward") == [("forward", 0.0, 1.0)]
    assert spans(result, "backward") == [("backward", 1.0, 4.0)]
    check(result, iteration=8.0, compute=4.0, communication=4.0)


def test_wfbp_by_hand() -> None:
    result = wfbp(EXAMPLE, F, B, comm1)
    # a ready 1.5 -> [1.5, 3.5]; b ready 3 waits for the stream -> [3.5, 5.5]; c -> [5.5, 7.5].
    assert spans(result) == [("a", 1.5, 3.5), ("b", 3.5, 5.5), ("c", 5.5, 7.5)]
    check(result, iteration=7.5, compute=4.0, communication=6.0)


def test_fusion_by_hand() -> None:
    result = fusion(EXAMPLE, F, B, comm1, threshold_bytes=200)
    # a (100) < 200 so b joins; {a, b} = 200 closes and leaves when b is ready (3): [3, 6].
    # c alone leaves when the stream frees: [6, 8].
    assert spans(result) == [("a..b (2 tensors)", 3.0, 6.0), ("c", 6.0, 8.0)]
    check(result, iteration=8.0, compute=4.0, communication=5.0)
    # Threshold 0: every tensor alone (WFBP); infinite: one bucket at backward end (BSP here,
    # because c is ready exactly when backward ends).
    assert fusion(EXAMPLE, F, B, comm1, threshold_bytes=0) == wfbp(EXAMPLE, F, B, comm1)
    assert (
        fusion(EXAMPLE, F, B, comm1, threshold_bytes=math.inf).timeline
        == bsp(EXAMPLE, F, B, comm1).timeline
    )


def test_mg_wfbp_by_hand() -> None:
    # The four contiguous plans: {a}{b}{c} 7.5, {ab}{c} 8, {abc} 8 and {a}{bc}:
    # a [1.5, 3.5], then b+c leave when c is ready (4): [4, 7]. The last is the unique optimum.
    assert [[g.name for g in group] for group in mg_wfbp_plan(EXAMPLE, F, comm1)] == [
        ["a"],
        ["b", "c"],
    ]
    result = mg_wfbp(EXAMPLE, F, B, comm1)
    assert spans(result) == [("a", 1.5, 3.5), ("b..c (2 tensors)", 4.0, 7.0)]
    check(result, iteration=7.0, compute=4.0, communication=5.0)


def test_local_sgd_by_hand() -> None:
    result = local_sgd(EXAMPLE, F, B, comm1, H=2)
    # Two steps of 4 s, then the 300-byte model average [8, 12]: 12 s per 2 steps.
    assert spans(result) == [("model average", 8.0, 12.0)]
    assert spans(result, "backward") == [("backward 1", 1.0, 4.0), ("backward 2", 5.0, 8.0)]
    check(result, iteration=6.0, compute=4.0, communication=2.0)
    assert (
        local_sgd(EXAMPLE, F, B, comm1, H=1).iteration_time_s
        == bsp(EXAMPLE, F, B, comm1).iteration_time_s
    )


def test_bytescheduler_by_hand_priority_only() -> None:
    result = bytescheduler(EXAMPLE2, F, B, comm2, partition_bytes=math.inf)
    # Times from the backward start; whole tensors: a 3.5 s, b and c 1.5 s. The stream serves the
    # released tensor nearest the input: a [0.5, 2]; b (ready 2) preempts a (2 s of a left);
    # c (ready 3) preempts b (0.5 s of b left); c [3, 4.5], b [4.5, 5], a [5, 7].
    assert spans(result) == [
        ("a", 0.5, 2.0), ("b", 2.0, 3.0), ("c", 3.0, 4.5), ("b", 4.5, 5.0), ("a", 5.0, 7.0),
    ]  # fmt: skip
    # Credit rule: one message in flight, the largest (a, 300 B); its mean residue 150 B drains in
    # comm2(150) = 2 s. b found 2 s of a unsent: waits min(2, 2) = 2, arrives 5 + 2 = 7. c found
    # 2.5 s unsent: waits 2, arrives 4.5 + 2 = 6.5. a found nothing: arrives 7.
    # Forward shares follow backward time: a 0.5/3, b 1.5/3, c 1/3 of 1 s.
    # c [6.5, 6.8333]; b waits until 7: [7, 7.5]; a [7.5, 7.6667].
    forward = spans(result, "forward")
    assert [name for name, _, _ in forward] == ["forward c", "forward b", "forward a"]
    assert [t for _, s, e in forward for t in (s, e)] == pytest.approx(
        [6.5, 6.5 + 1 / 3, 7.0, 7.5, 7.5, 7.5 + 1 / 6]
    )
    check(result, iteration=7.5 + 1 / 6, compute=4.0, communication=6.5)
    # FIFO (WFBP) sends c last and the next forward waits for it: 8 s.
    assert wfbp(EXAMPLE2, F, B, comm2).iteration_time_s == pytest.approx(8.0)


def test_bytescheduler_by_hand_with_partitions() -> None:
    result = bytescheduler(EXAMPLE2, F, B, comm2, partition_bytes=150)
    # a is cut into two 150-byte partitions (2 s each). a1 [0.5, 2] (0.5 s left); b preempts:
    # [2, 3]; c preempts b: [3, 4.5]; b [4.5, 5]; a1 [5, 5.5]; a2 [5.5, 7.5].
    assert spans(result) == [
        ("a [1/2]", 0.5, 2.0), ("b", 2.0, 3.0), ("c", 3.0, 4.5), ("b", 4.5, 5.0),
        ("a [1/2]", 5.0, 5.5), ("a [2/2]", 5.5, 7.5),
    ]  # fmt: skip
    # Credit: one 150 B partition in flight, mean residue 75 B: comm2(75) = 1.25 s. b found 2.5 s
    # unsent (waits 1.25, arrives 6.25), c 3 s (waits 1.25, arrives 5.75); a arrives 7.5.
    # Forward: c [5.75, 6.0833], b [6.25, 6.75], a waits for a2: [7.5, 7.6667]. Smaller
    # partitions block for less: b and c arrive 0.75 s earlier than with whole tensors.
    assert [s for _, s, _ in spans(result, "forward")] == pytest.approx([5.75, 6.25, 7.5])
    check(result, iteration=7.5 + 1 / 6, compute=4.0, communication=7.0)


def test_bytescheduler_whole_tensors_on_example_1() -> None:
    result = bytescheduler(EXAMPLE, F, B, comm1, partition_bytes=math.inf)
    # 2 s per tensor. a [0.5, 2]; b preempts at 2 (0.5 s of a left); c preempts b at 3 (1 s of b
    # left); c [3, 5], b [5, 6], a [6, 6.5]. Credit residue 50 B: comm1(50) = 1.5 s. b waits
    # min(1.5, 0.5) and arrives 6.5, c min(1.5, 1.5) and arrives 6.5, a 6.5: the forward runs
    # [6.5, 7.5] without waits, as with FIFO.
    assert spans(result) == [
        ("a", 0.5, 2.0), ("b", 2.0, 3.0), ("c", 3.0, 5.0), ("b", 5.0, 6.0), ("a", 6.0, 6.5),
    ]  # fmt: skip
    check(result, iteration=7.5, compute=4.0, communication=6.0)


def test_bytescheduler_over_a_cycle_fuses_a_credit_window() -> None:
    """With Horovod's cycle a byte costs (comm(W) + message_s + cycle/2) / W for the fused window
    W = min(credit, fusion buffer, all bytes); every tensor first waits half a cycle."""
    costs = FixedCosts(cycle_s=0.2, message_s=0.1, cycle_fusion_bytes=1000)
    result = bytescheduler(EXAMPLE, F, B, comm1, partition_bytes=50, credit_bytes=200,
                           costs=costs)  # fmt: skip
    per_byte = (comm1(200) + 0.1 + 0.1) / 200  # 3.2 s per 200-byte window
    pieces = [s for s in result.comm_segments()]
    assert sum(s.duration_s for s in pieces) == pytest.approx(300 * per_byte)
    assert pieces[0].start_s == pytest.approx(0.5 + 0.1)  # a's release plus half a cycle
    assert all(s.bytes <= 50 for s in pieces)


def test_no_gradients_costs_only_compute() -> None:
    for name, options in [
        ("bsp", {}),
        ("wfbp", {}),
        ("fusion", {"threshold_bytes": 10}),
        ("mg-wfbp", {}),
        ("bytescheduler", {"partition_bytes": 10}),
        ("local-sgd", {"H": 3}),
    ]:
        result = simulate(name, [], F, B, comm1, **options)
        check(result, iteration=4.0, compute=4.0, communication=0.0)


def test_simulate_dispatches_by_name() -> None:
    assert simulate("mg-wfbp", EXAMPLE, F, B, comm1) == mg_wfbp(EXAMPLE, F, B, comm1)
    assert simulate("local-sgd", EXAMPLE, F, B, comm1, H=4) == local_sgd(EXAMPLE, F, B, comm1, H=4)
    with pytest.raises(ValueError, match="schedule: unknown schedule 'mg_wfbp'; choose from bsp"):
        simulate("mg_wfbp", EXAMPLE, F, B, comm1)
    with pytest.raises(TypeError, match="threshold_bytes"):
        simulate("fusion", EXAMPLE, F, B, comm1)


def _bad_gradient(name: str, size: float, ready: float) -> Gradient:
    grad = Gradient(name, 1, 0)
    object.__setattr__(grad, "bytes", size)  # bypass the constructor's own check
    object.__setattr__(grad, "ready_s", ready)
    return grad


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: wfbp([_bad_gradient("x", -1, 0)], F, B, comm1), r"gradients\[0\] \('x'\): bytes"),
        (lambda: wfbp([_bad_gradient("x", 1, -1)], F, B, comm1), r"gradients\[0\].*ready_s"),
        (lambda: bsp([_bad_gradient("x", math.nan, 0)], F, B, comm1), "bytes must be finite"),
        (lambda: mg_wfbp(EXAMPLE[::-1], F, B, comm1), r"gradients\[1\] \('b'\).*ready order"),
        (lambda: wfbp(EXAMPLE, F, 2.0, comm1), r"gradients\[2\].*after the end of backward"),
        (lambda: wfbp(EXAMPLE, -1.0, B, comm1), "forward_s must be"),
        (lambda: wfbp(EXAMPLE, F, math.inf, comm1), "backward_s must be"),
        (lambda: fusion(EXAMPLE, F, B, comm1, threshold_bytes=-1), "threshold_bytes must be >= 0"),
        (lambda: fusion(EXAMPLE, F, B, comm1, threshold_bytes=math.nan), "threshold_bytes"),
        (lambda: bytescheduler(EXAMPLE, F, B, comm1, partition_bytes=0), "partition_bytes"),
        (lambda: bytescheduler(EXAMPLE, F, B, comm1, partition_bytes=1e-6), "partition_bytes"),
        (lambda: local_sgd(EXAMPLE, F, B, comm1, H=0), "H must be an integer >= 1"),
        (lambda: local_sgd(EXAMPLE, F, B, comm1, H=2.5), "H must be an integer"),
        (lambda: wfbp(EXAMPLE, F, B, lambda n: -1.0), r"comm\(100.*returned -1.0"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_gradient_constructor_rejects_negative_sizes() -> None:
    with pytest.raises(ValueError, match="bytes and ready_s must be >= 0"):
        Gradient("x", -1, 0)


def test_docstring_examples_run() -> None:
    # The package re-exports functions under the module names, so import the modules by path.
    names = ["bsp", "wfbp", "fusion", "mg_wfbp", "bytescheduler", "local_sgd", "simulate", "comm"]
    modules = [schedules] + [importlib.import_module(f"costmodels.schedules.{n}") for n in names]
    for module in modules:
        failures, _ = doctest.testmod(module)
        assert failures == 0, module.__name__
