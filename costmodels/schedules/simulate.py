"""Run any schedule by name: the single entry point the calculator and the CLI use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from costmodels.gradients import Gradient
from costmodels.schedules.bsp import bsp
from costmodels.schedules.bytescheduler import bytescheduler
from costmodels.schedules.fusion import fusion
from costmodels.schedules.local_sgd import local_sgd
from costmodels.schedules.mg_wfbp import mg_wfbp
from costmodels.schedules.result import Comm, IterationResult
from costmodels.schedules.wfbp import wfbp

# Name -> schedule. Options each one needs: fusion threshold_bytes, bytescheduler
# partition_bytes, local-sgd H; the others take none.
SCHEDULES: dict[str, Callable[..., IterationResult]] = {
    "bsp": bsp,
    "wfbp": wfbp,
    "fusion": fusion,
    "mg-wfbp": mg_wfbp,
    "bytescheduler": bytescheduler,
    "local-sgd": local_sgd,
}


def simulate(
    schedule: str,
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    **options: Any,
) -> IterationResult:
    """One iteration of ``schedule`` (a key of :data:`SCHEDULES`) with its keyword options.

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("fc", 100, 0.5), Gradient("conv", 100, 3.0)]
        >>> simulate("fusion", grads, 1.0, 3.0, lambda n: 1 + 0.01 * n, threshold_bytes=0)
        ... # doctest: +ELLIPSIS
        IterationResult(iteration_time_s=6.0, ...)
    """
    try:
        function = SCHEDULES[schedule]
    except (KeyError, TypeError):
        raise ValueError(
            f"schedule: unknown schedule {schedule!r}; choose from {', '.join(SCHEDULES)}"
        ) from None
    return function(gradients, forward_s, backward_s, comm, **options)
