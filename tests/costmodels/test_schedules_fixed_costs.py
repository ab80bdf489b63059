"""Framework fixed costs (costmodels.schedules.fixed_costs) worked out by hand, and the cycle
against an independent re-count.

Example 1 of test_schedules_hand_worked: forward 1 s, backward 3 s, tensors a, b, c of 100 bytes
ready 1.5, 3 and 4 s from the forward start, comm(n) = 1 + 0.01 n (2 s for one tensor).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.gradients import Gradient
from costmodels.schedules import bsp, fusion, local_sgd, mg_wfbp, wfbp
from costmodels.schedules.fixed_costs import CYCLE_PHASES, FixedCosts
from costmodels.schedules.frameworks import FRAMEWORKS, HOROVOD_0_19, framework_defaults

F, B = 1.0, 3.0
EXAMPLE = [Gradient("a", 100, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]


def comm1(n: float) -> float:
    return 1 + 0.01 * n


def test_per_message_cost_occupies_the_stream() -> None:
    # 2.25 s per message: a [1.5, 3.75], b [3.75, 6], c [6, 8.25].
    result = wfbp(EXAMPLE, F, B, comm1, costs=FixedCosts(message_s=0.25))
    assert result.iteration_time_s == pytest.approx(8.25)
    assert result.communication_s == pytest.approx(6.75)


def test_delivery_delays_the_end_not_the_stream() -> None:
    # The stream is as without costs (a [1.5, 3.5], b [3.5, 5.5], c [5.5, 7.5]); c lands 0.5 later.
    result = wfbp(EXAMPLE, F, B, comm1, costs=FixedCosts(delivery=lambda n: 0.5))
    assert [s.end_s for s in result.comm_segments()] == pytest.approx([3.5, 5.5, 7.5])
    assert result.iteration_time_s == pytest.approx(8.0)


@pytest.mark.parametrize(("overlap", "expected"), [(1.0, 7.5), (0.5, 8.75), (0.0, 10.0)])
def test_overlap_slows_the_stream_while_backward_computes(overlap: float, expected: float) -> None:
    # overlap 0.5: a runs at half speed until 4 (1.25 s of its 2 s done), ends 4.75; b [4.75,
    # 6.75], c [6.75, 8.75]. overlap 0: nothing moves before 4, then 3 x 2 s: 10.
    result = wfbp(EXAMPLE, F, B, comm1, costs=FixedCosts(overlap=overlap))
    assert result.iteration_time_s == pytest.approx(expected)


def test_ddp_first_bucket() -> None:
    # threshold 250, first bucket 100: [a] leaves at 1.5 (2 s), [b, c] at 4 (3 s): 7. One
    # bucket of all three (no first-bucket cap): 4 + 4 = 8.
    assert fusion(EXAMPLE, F, B, comm1, threshold_bytes=250,
                  first_bucket_bytes=100).iteration_time_s == pytest.approx(7.0)  # fmt: skip
    assert fusion(EXAMPLE, F, B, comm1, threshold_bytes=250).iteration_time_s == pytest.approx(8)


def test_mg_wfbp_runs_the_plan_of_its_own_cost_model() -> None:
    # A planner that believes every message costs 100 s merges everything into one message,
    # which then costs comm1(300) = 4 s after backward: 8 s, slower than the true optimum.
    planned = mg_wfbp(EXAMPLE, F, B, comm1, plan_comm=lambda n: 100 + 0.01 * n)
    assert planned.iteration_time_s == pytest.approx(8.0)
    assert len(planned.comm_segments()) == 1
    assert mg_wfbp(EXAMPLE, F, B, comm1).iteration_time_s <= 7.5


def test_local_sgd_pays_the_costs_once_per_period() -> None:
    # H = 2: 8 s of compute, then comm1(300) + 0.5 on the stream and 0.25 delivery: 12.75 s per
    # two steps, 6.375 per step.
    costs = FixedCosts(message_s=0.5, delivery=lambda n: 0.25)
    result = local_sgd(EXAMPLE, F, B, comm1, H=2, costs=costs)
    assert result.iteration_time_s == pytest.approx(6.375)
    assert result.communication_s == pytest.approx(4.5 / 2)


def test_a_lone_message_waits_half_a_cycle_on_average() -> None:
    """BSP's one message is handed over at the next boundary; averaged over the phases the wait
    is cycle / 2 up to cycle / (2 * phases)."""
    cycle = 0.8
    plain = bsp(EXAMPLE, F, B, comm1).iteration_time_s
    waited = bsp(EXAMPLE, F, B, comm1, costs=FixedCosts(cycle_s=cycle)).iteration_time_s
    assert waited - plain == pytest.approx(cycle / 2, abs=cycle / (2 * CYCLE_PHASES) + 1e-12)
    assert local_sgd(EXAMPLE, F, B, comm1, H=1, costs=FixedCosts(cycle_s=cycle)).iteration_time_s \
        == pytest.approx(waited, rel=1e-12)  # fmt: skip


def _recount(grads, forward, backward, comm, cycle, fusion_bytes) -> float:
    """Independent count of Horovod's cycle: per phase, bucket the ready times by boundary with
    integer arithmetic on the boundary index, fuse in order up to the buffer, send FIFO."""
    total = 0.0
    for k in range(CYCLE_PHASES):
        phase = (k + 0.5) / CYCLE_PHASES * cycle
        handed: dict[int, list[float]] = {}
        for g in grads:
            index = max(0, math.ceil((forward + g.ready_s - phase) / cycle))
            handed.setdefault(index, []).append(g.bytes)
        free = 0.0
        for index in sorted(handed):
            messages: list[float] = []
            for size in handed[index]:
                if messages and messages[-1] + size <= fusion_bytes:
                    messages[-1] += size
                else:
                    messages.append(size)
            for size in messages:
                free = max(free, phase + index * cycle) + comm(size)
        total += max(forward + backward, free)
    return total / CYCLE_PHASES


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.floats(0, 1e6), min_size=1, max_size=8),
    fractions=st.lists(st.floats(0, 1), min_size=8, max_size=8),
    cycle=st.floats(0.01, 2.0),
    fusion_bytes=st.floats(1.0, 3e6),
)
def test_cycle_fusion_matches_an_independent_recount(sizes, fractions, cycle, fusion_bytes):
    ready = sorted(f * B for f in fractions[: len(sizes)])
    grads = [Gradient(f"g{i}", s, r) for i, (s, r) in enumerate(zip(sizes, ready, strict=True))]
    costs = FixedCosts(cycle_s=cycle, cycle_fusion_bytes=fusion_bytes)
    result = wfbp(grads, F, B, comm1, costs=costs)
    assert result.iteration_time_s == pytest.approx(
        _recount(grads, F, B, comm1, cycle, fusion_bytes), rel=1e-9
    )


def test_bad_costs_are_refused() -> None:
    for kwargs, words in [
        ({"message_s": -1.0}, "message_s"),
        ({"cycle_s": math.nan}, "cycle_s"),
        ({"cycle_fusion_bytes": -1}, "cycle_fusion_bytes"),
        ({"overlap": 1.5}, "overlap"),
        ({"delivery": 3.0}, "delivery"),
    ]:
        with pytest.raises(ValueError, match=words):
            FixedCosts(**kwargs)
    with pytest.raises(ValueError, match="costs must be a FixedCosts"):
        wfbp(EXAMPLE, F, B, comm1, costs={"cycle_s": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="framework: unknown 'tensorflow'"):
        framework_defaults("tensorflow")


def test_framework_presets_are_method_arguments() -> None:
    from costmodels.dp.predict import Method

    for name in FRAMEWORKS:
        Method(**framework_defaults(name))  # every preset is a valid set of Method fields
    assert HOROVOD_0_19 == {"cycle_time_s": 5e-3, "fusion_threshold_bytes": 64 * 2**20}
