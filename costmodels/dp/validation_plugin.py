"""The CPU-side cost of ByteScheduler's PyTorch plugin in Shi et al.'s runs, fitted.

ByteScheduler-A2A ran ByteScheduler's PyTorch plugin (bytedance/byteps, branch bytescheduler,
bytescheduler/pytorch/horovod.py): a Python thread polls every outstanding task in a loop, steps
the optimizer one parameter at a time when its all-reduce completes, and forward hooks block each
layer on a lock until its update is done. None of that is communication, and the schedule model
(costmodels.schedules.bytescheduler) prices communication only: the runs are slower than it
predicts on every GPU count, one node included, where communication hides behind backward
(ResNet-50 the most). The maintainers' tracker has the same observation on single PCIe machines
(the validation page cites it).

This module fits that cost as one number per network, ``plugin_overhead_s``: seconds added to
each ByteScheduler-A2A iteration, the median over the fit set's ByteScheduler-A2A rows of
(measured iteration - predicted iteration without it), at least 0; 0 without such rows. One
number for every model is a strong simplification (the rows imply 50-150 ms, most for
ResNet-50), which is why it is judged leaving each model out (costmodels.dp.validation_lodo).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from costmodels.dp.validation_rows import Row
from costmodels.dp.validation_testbed import predicted_iteration_s

PLUGIN_METHOD = "ByteScheduler-A2A"


def plugin_rows(rows: Sequence[Row], network: str) -> list[Row]:
    """The rows that identify the cost: ByteScheduler-A2A on 2 or more GPUs of ``network``."""
    return [r for r in rows if r.network == network and r.method == PLUGIN_METHOD
            and r.gpus > 1]  # fmt: skip


def fit_plugin_overhead(
    rows: Sequence[Row], link_of: Callable[[Row], dict[str, float]], allreduce: str
) -> float:
    """Median of what ``rows`` take beyond their prediction (module docstring), >= 0."""
    if not rows:
        return 0.0
    extra = [row.measured_iteration_s
             - predicted_iteration_s(row, {**link_of(row), "plugin_overhead_s": 0.0}, allreduce)
             for row in rows]  # fmt: skip
    return max(0.0, float(np.median(extra)))
