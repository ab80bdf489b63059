"""MG-WFBP's merge plan as its authors' code makes it: a greedy pass over the layers.

The optimal contiguous plan is costmodels.schedules.mg_wfbp.mg_wfbp_plan. The runs of Shi et al.'s
comparative study (HKBU-HPML/ddl-benchmarks, mgwfbp/hv_distributed_optimizer.py,
``_generate_groups_mgwfbp``) plan differently, and the plan decides what the wire sees, so the
validation prices their rule. Restated in our words, with tensors i = 0 .. L-1 in ready order
(r_i: ready time, b_i: bytes, t_i = alpha + beta * b_i the planned all-reduce time, 0 once merged
away), and the planned start c_0 = r_0, c_i = max(c_{i-1} + t_{i-1}, r_i):

1. Walk i = 0 .. L-2. If the next tensor is ready before i's all-reduce would end
   (r_{i+1} < c_i + t_i), merge i into i+1 when i would not even have started
   (c_i > r_{i+1}) or when the wait for the next tensor is shorter than one start-up
   (r_{i+1} - c_i < alpha).
2. A tensor not merged by rule 1 is still merged when it holds fewer than 8,192 values
   (``p[l] < 8192`` in that code: biases and normalisation weights never travel alone).
3. Merging i into i+1 moves its bytes (b_{i+1} += b_i, b_i = 0), re-prices t_{i+1} with the new
   size and recomputes every planned start; a tensor not merged closes the current group. The
   last tensor (the layer nearest the input) always ends the last group.

The planned times use the code's own (alpha, beta) table (costmodels/data/paper-a-alpha-beta.csv),
not the network it then runs on.
"""

from __future__ import annotations

from collections.abc import Sequence

from costmodels.gradients import Gradient

SMALL_VALUES = 8192  # rule 2: tensors below this many values are always merged
BYTES_PER_VALUE = 4  # fp32 gradients, as the runs used


def _starts(ready: Sequence[float], planned: Sequence[float]) -> list[float]:
    starts = [ready[0]]
    for i in range(1, len(ready)):
        starts.append(max(starts[-1] + planned[i - 1], ready[i]))
    return starts


def shi_merge_plan(
    gradients: Sequence[Gradient], alpha_s: float, beta_s_per_byte: float
) -> list[list[Gradient]]:
    """Contiguous groups (ready order) by the greedy rules of the module docstring.

    Example ("a" waits exactly one alpha for "b", so it goes alone; the small "b" joins "c")::

        >>> g = [Gradient("a", 4e6, 0.0), Gradient("b", 400, 0.001), Gradient("c", 4e6, 1.0)]
        >>> [[x.name for x in group] for group in shi_merge_plan(g, 1e-3, 1e-9)]
        [['a'], ['b', 'c']]
    """
    grads = list(gradients)
    if not grads:
        return []
    ready = [g.ready_s for g in grads]
    size = [g.bytes for g in grads]

    def price(nbytes: float) -> float:
        return alpha_s + beta_s_per_byte * nbytes if nbytes > 0 else 0.0

    planned = [price(b) for b in size]
    starts = _starts(ready, planned)
    groups: list[list[Gradient]] = []
    group: list[Gradient] = []
    for i in range(len(grads) - 1):
        group.append(grads[i])
        merge = False
        if ready[i + 1] < starts[i] + planned[i]:
            merge = starts[i] > ready[i + 1] or ready[i + 1] - starts[i] < alpha_s
        if not merge and size[i] < SMALL_VALUES * BYTES_PER_VALUE:
            merge = True
        if merge:
            size[i + 1] += size[i]
            size[i], planned[i] = 0.0, 0.0
            planned[i + 1] = price(size[i + 1])
            starts = _starts(ready, planned)
        else:
            groups.append(group)
            group = []
    group.append(grads[-1])
    groups.append(group)
    return groups
