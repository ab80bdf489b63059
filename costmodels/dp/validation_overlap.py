"""How much of its speed a single node's gradient exchange keeps while backward computes.

On Shi et al.'s testbed (4 RTX 2080 Ti per node on PCIe 3.0 through the CPU) the 4-GPU rows of
the overlapping methods (WFBP, MG-WFBP, BytePS's local reduction) ran well below what a stream at
the BSP-fitted speed predicts: the exchange runs NCCL kernels and PCIe copies on the GPUs that are
computing backward, so both slow down. The schedules express this with one number, ``overlap``
(costmodels.schedules.fixed_costs: the share of the stream's speed left while backward computes).
Rows on several nodes wait for the network, which backward does not slow, and keep 1
(costmodels.dp.validation_testbed).

The number is fitted, once per network, on the single-node rows of the FIFO schedules the fit set
holds (ByteScheduler's priority stream does not use it): the value of :data:`OVERLAP_GRID` with
the smallest mean absolute relative error of throughput, with the links already fitted on BSP;
1 (no slowdown) when the fit set has no such rows. Ties go to the larger value (less slowdown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from costmodels.dp.validation_rows import GPUS_PER_NODE, METHODS, Row, run_of
from costmodels.dp.validation_testbed import predicted_iteration_s

OVERLAP_GRID = tuple(round(0.05 * k, 2) for k in range(20, 0, -1))  # 1.0, 0.95, ..., 0.05
FIFO_SCHEDULES = ("wfbp", "mg-wfbp", "fusion")
MAX_OVERLAP_ROWS = 24  # bounds the fit's work (grid x rows simulations); Shi et al.'s data: 12


def overlap_rows(rows: Sequence[Row], network: str) -> list[Row]:
    """The rows of ``network`` that identify the overlap: one node, 2+ GPUs, a FIFO schedule;
    the rows of at most :data:`MAX_OVERLAP_ROWS` distinct runs, the first in the file (a bound
    on the work of a large user file, not a choice on Shi et al.'s 12; repeats are free)."""
    found, runs = [], set()
    for r in rows:
        if (r.network == network and 1 < r.gpus <= GPUS_PER_NODE
                and METHODS[r.method].schedule in FIFO_SCHEDULES):  # fmt: skip
            if run_of(r) in runs or len(runs) < MAX_OVERLAP_ROWS:
                runs.add(run_of(r))
                found.append(r)
    return found


def fit_overlap(
    rows: Sequence[Row], link_of: Callable[[Row], dict[str, float]], allreduce: str
) -> float:
    """The grid value that best explains ``rows`` (module docstring); ``link_of`` gives a row's
    fitted link (the architecture's BSP fit)."""
    if not rows:
        return 1.0

    def mean_error(overlap: float) -> float:
        total = 0.0
        for row in rows:
            link = {**link_of(row), "intra_overlap": overlap}
            predicted = row.batch * row.gpus / predicted_iteration_s(row, link, allreduce)
            total += abs(predicted - row.measured) / row.measured
        return total / len(rows)

    return min(OVERLAP_GRID, key=mean_error)  # min keeps the first (largest) of equal errors
