"""The local-sgd cost model against a step-by-step count, and against the local-SGD schedule.

The count walks H local steps (no messages) and then the 2(p-1) steps of one ring all-reduce of
the n-byte model, pricing each ring step as alpha + beta * (n / p) (+ gamma * n / p when it adds),
and divides the period's time and bytes by H. It never reads the sympy expression.
"""

from __future__ import annotations

import pytest

import costmodels
from costmodels.gradients import Gradient
from costmodels.schedules import comm_from_model, local_sgd

ALPHA, BETA, GAMMA = 7e-6, 2.5e-10, 3e-11


def period_by_steps(p: int, n: float) -> tuple[float, float]:
    """(seconds, bytes sent per rank) of H local steps followed by one ring average.

    The H local steps put nothing on the wire, so only the average is counted; the caller
    divides the period's totals by H."""
    time = sent = 0.0
    chunk = n / p
    for phase_adds in (True, False):  # reduce-scatter adds, all-gather copies
        for _ in range(p - 1):
            time += ALPHA + chunk * BETA + (chunk * GAMMA if phase_adds else 0.0)
            sent += chunk
    return time, sent


@pytest.mark.parametrize("p", [1, 2, 3, 8, 64])
@pytest.mark.parametrize("steps", [1, 2, 7, 100])
@pytest.mark.parametrize("n", [4.0, 1e8])
def test_local_sgd_model_matches_step_count(p: int, steps: int, n: float) -> None:
    model = costmodels.get("local-sgd")
    time, sent = period_by_steps(p, n)
    values = dict(p=p, n=n, H=steps, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert model.evaluate(**values) == pytest.approx(time / steps, rel=1e-12, abs=1e-18)
    assert model.evaluate_volume(**values) == pytest.approx(sent / steps, rel=1e-12, abs=1e-12)


def test_local_sgd_model_with_h_1_is_one_ring_allreduce() -> None:
    values = dict(p=16, n=1e8, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    ring = costmodels.get("ring-allreduce").evaluate(**values)
    assert costmodels.get("local-sgd").evaluate(H=1, **values) == pytest.approx(ring, rel=1e-12)


@pytest.mark.parametrize("steps", [1, 4, 32])
def test_local_sgd_schedule_agrees_with_the_model(steps: int) -> None:
    """With no compute, the schedule's per-step time is exactly the model's per-step cost."""
    grads = [Gradient("fc", 4e6, 0.0), Gradient("conv", 6e6, 0.0)]
    ring = comm_from_model("ring-allreduce", p=8, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    result = local_sgd(grads, 0.0, 0.0, ring, H=steps)
    expected = costmodels.get("local-sgd").evaluate(
        p=8, n=1e7, H=steps, alpha=ALPHA, beta=BETA, gamma=GAMMA
    )
    assert result.iteration_time_s == pytest.approx(float(expected), rel=1e-12)
    assert result.communication_s == pytest.approx(float(expected), rel=1e-12)
