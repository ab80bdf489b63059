"""Closed-form LLM pieces (TP, SP, pipeline bubble, ZeRO/FSDP) against counts and papers."""

from __future__ import annotations

import pytest

import costmodels
from costmodels.llm.pipeline import pipeline_time

ALPHA, BETA, GAMMA = 3e-6, 1 / 300e9, 1 / 2e12
N = 2 * 4 * 2048 * 12288  # one micro-batch of 4 sequences x 2048 tokens x hidden 12288, bf16


def ring_allreduce_by_steps(p: int, n: float) -> float:
    """2(p-1) steps of n/p bytes; the first p-1 also add n/p bytes."""
    chunk = n / p
    return sum(ALPHA + chunk * BETA + chunk * GAMMA for _ in range(p - 1)) + sum(
        ALPHA + chunk * BETA for _ in range(p - 1)
    )


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_tensor_parallel_is_four_all_reduces_per_layer(p: int) -> None:
    model = costmodels.get("megatron-tp")
    values = dict(p=p, n=N, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert model.evaluate("per-layer", **values) == pytest.approx(4 * ring_allreduce_by_steps(p, N))
    full = model.evaluate("per-layer-full-recompute", **values)
    assert full == pytest.approx(6 * ring_allreduce_by_steps(p, N))
    # Narayanan et al. SC'21: 8 b s h (t-1)/t per layer and micro-batch (in units of b s h).
    assert model.evaluate_volume("per-layer", **values) == pytest.approx(8 * (p - 1) / p * N)


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_sequence_parallel_costs_what_tensor_parallel_costs(p: int) -> None:
    """Korthikanti et al. 2022: reduce-scatter + all-gather has the all-reduce's bandwidth."""
    values = dict(p=p, n=N, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    sp_time = costmodels.get("seq-parallel").evaluate(**values)
    tp_time = costmodels.get("megatron-tp").evaluate("per-layer", **values)
    assert sp_time == pytest.approx(tp_time)
    assert costmodels.get("seq-parallel").evaluate_volume(**values) == pytest.approx(
        costmodels.get("megatron-tp").evaluate_volume("per-layer", **values)
    )


@pytest.mark.parametrize(("p", "m"), [(1, 4), (2, 4), (4, 8), (4, 16), (8, 8)])
def test_bubble_matches_the_pipeline_schedule(p: int, m: int) -> None:
    """With free links, the model's overhead is the schedule's time minus m (t_f + t_b)."""
    t_f, t_b = 0.010, 0.021
    ideal = m * (t_f + t_b)
    free = dict(p=p, m=m, n=N, t_f=t_f, t_b=t_b, alpha=0.0, beta=0.0)
    for schedule in ("gpipe", "1f1b"):
        bubble = costmodels.get("gpipe").evaluate(schedule, **free)
        assert bubble == pytest.approx(pipeline_time(t_f, t_b, p, m, schedule=schedule) - ideal)
    for v in (2, 4):
        interleaved = costmodels.get("megatron-3d").evaluate(**free, v=v)
        expected = pipeline_time(t_f, t_b, p, m, v=v, schedule="interleaved") - ideal
        assert interleaved == pytest.approx(expected)


def test_pipeline_transfers_as_each_schedule_exposes_them() -> None:
    """GPipe: fill and drain, 2(p-1) messages. 1F1B, p = 4, m = 8, by hand: the first micro-batch
    crosses 3 boundaries each way (6); every later backward waits for its gradient, and of the 7
    later micro-batches floor(7 * 3/4) = 5 add a round trip (10 more): 16 messages. Interleaved:
    the lower bound 2(pv - 1) = 14 for v = 2 (tests/costmodels/test_llm_comm_pipeline.py holds
    all three against the simulated schedules)."""
    p, m, t = 4, 8, 0.01
    values = dict(p=p, m=m, n=N, t_f=t, t_b=t, alpha=ALPHA, beta=BETA)
    message = ALPHA + N * BETA
    for schedule, messages in (("gpipe", 6), ("1f1b", 16)):
        with_links = costmodels.get("gpipe").evaluate(schedule, **values)
        free = costmodels.get("gpipe").evaluate(schedule, **{**values, "alpha": 0.0, "beta": 0.0})
        assert with_links - free == pytest.approx(messages * message)
    interleaved = costmodels.get("megatron-3d")
    with_links = interleaved.evaluate(**values, v=2)
    free = interleaved.evaluate(**{**values, "alpha": 0.0, "beta": 0.0}, v=2)
    assert with_links - free == pytest.approx(14 * message)
    assert interleaved.evaluate_volume(**values, v=2) == 2 * 2 * m * N


@pytest.mark.parametrize("p", [1, 2, 8, 64])
def test_zero_volumes_follow_the_paper(p: int) -> None:
    """Rajbhandari et al. SC'20 Sec. 7: stages 1-2 move 2 Psi like all-reduce; stage 3 1.5x."""
    values = dict(p=p, n=N, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    zero = costmodels.get("zero")
    baseline = costmodels.get("ring-allreduce").evaluate(**values)
    assert zero.evaluate("stage-1-2", **values) == pytest.approx(baseline)
    low, high = (zero.evaluate_volume(s, **values) for s in ("stage-1-2", "stage-3"))
    assert high == pytest.approx(1.5 * low)
    fsdp = costmodels.get("fsdp")
    assert fsdp.evaluate("full-shard", **values) == pytest.approx(
        zero.evaluate("stage-3", **values)
    )
