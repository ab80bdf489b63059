"""MG-WFBP: the merge of consecutive gradients that minimises the iteration time.

Record ``mg-wfbp``: S. Shi, X. Chu and B. Li, 'MG-WFBP: Efficient Data Communication for
Distributed Synchronous SGD Algorithms', IEEE INFOCOM 2019, pp. 172-180,
doi:10.1109/INFOCOM.2019.8737367; extended as 'MG-WFBP: Merging Gradients Wisely for Efficient
Communication in Distributed Deep Learning', IEEE TPDS, 2021, doi:10.1109/TPDS.2021.3052862.
The paper models an all-reduce of n bytes as alpha + beta * n and chooses which layers to merge
so that the WFBP iteration ends earliest. We compute that optimum exactly with a dynamic
programme over contiguous groups in ready order (our formulation, not the paper's algorithm).

Recurrence. Number the tensors 1..L in ready order, r_j = forward_s + ready_s of tensor j,
S_j = bytes of tensors 1..j. Let E[j] be the earliest time the stream can finish sending tensors
1..j when they form contiguous groups sent FIFO, each group leaving once its last tensor is ready:

    E[0] = 0
    E[j] = min over 0 <= i < j of  max(E[i], r_j) + comm(S_j - S_i)       (group i+1..j last)
    T_mg = max(forward_s + backward_s, E[L])

Why it is exact: a plan's finishing time is max(prefix end, r_j) + comm(...), non-decreasing in
the prefix end, so an optimal plan may always use an optimal plan for its prefix. This holds for
any comm function, not only alpha + beta * n. Cost: O(L^2) calls of comm at worst; in practice
far fewer, because the scan over i runs from j-1 downwards and stops once r_j + comm(S_j - S_i)
exceeds the best finish found (every smaller i sends more bytes after r_j, so it cannot do better
when comm is non-decreasing in the message size, as every cost model here is). Since WFBP, every
fusion threshold and BSP's single message (which leaves at backward end >= r_L) are all
contiguous plans, T_mg <= min(T_wfbp, T_fusion, T_bsp).

The plan is only as good as the cost model it is made with: the MG-WFBP code plans with its own
alpha-beta fit (``plan_comm``; for Shi et al.'s 10GbE runs the fallback table of its source,
costmodels/data/paper-a-alpha-beta.csv) and then runs on the real network, so the plan and the
time it is priced at may use different functions. Without ``plan_comm`` it plans with ``comm``
plus the per-message cost of ``costs``, i.e. optimally for the stream it runs on.
"""

from __future__ import annotations

from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import check_inputs, message_seconds, send_fifo
from costmodels.schedules.fixed_costs import FixedCosts, check_costs
from costmodels.schedules.mg_wfbp_shi import shi_merge_plan
from costmodels.schedules.result import Comm, IterationResult


def mg_wfbp_plan(
    gradients: Sequence[Gradient], forward_s: float, comm: Comm
) -> list[list[Gradient]]:
    """The optimal contiguous groups (ready order) by the recurrence in the module docstring.

    Ties go to the plan whose last group starts earliest in the list (fewer, larger messages).
    Assumes ``comm`` is non-decreasing in the message size (the early stop relies on it).
    """
    grads = list(gradients)
    prefix = [0.0]
    for grad in grads:
        prefix.append(prefix[-1] + grad.bytes)
    end = [0.0] * (len(grads) + 1)
    cut = [0] * (len(grads) + 1)  # cut[j]: the last group of the best plan for 1..j is cut[j]+1..j
    for j in range(1, len(grads) + 1):
        ready = forward_s + grads[j - 1].ready_s
        best, best_i = float("inf"), 0
        for i in range(j - 1, -1, -1):
            seconds = message_seconds(comm, prefix[j] - prefix[i])
            if ready + seconds > best:  # smaller i: bigger message, so never better
                break
            finish = max(end[i], ready) + seconds
            if finish <= best:  # "<=" while walking down keeps the earliest start on ties
                best, best_i = finish, i
        end[j], cut[j] = best, best_i
    groups: list[list[Gradient]] = []
    j = len(grads)
    while j > 0:
        groups.append(grads[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def mg_wfbp(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    plan_comm: Comm | None = None,
    costs: FixedCosts | None = None,
    greedy_alpha_beta: tuple[float, float] | None = None,
) -> IterationResult:
    """WFBP with the merge plan of :func:`mg_wfbp_plan`, made with ``plan_comm`` (default:
    ``comm`` plus the per-message cost of ``costs``) and sent with ``comm`` and ``costs``.
    ``greedy_alpha_beta`` (alpha s, beta s/byte) plans instead with the authors' greedy rule
    (costmodels.schedules.mg_wfbp_shi) on that affine model.

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("a", 100, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]
        >>> mg_wfbp(grads, 1.0, 3.0, lambda n: 1 + 0.01 * n).iteration_time_s
        7.0
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    costs = check_costs(costs)
    if plan_comm is None:
        extra = costs.message_s
        plan_comm = comm if extra == 0 else (lambda size: comm(size) + extra)
    elif not callable(plan_comm):
        raise TypeError(f"plan_comm must be a callable bytes -> seconds, got {plan_comm!r}")
    if greedy_alpha_beta is not None:
        plan = shi_merge_plan(grads, *greedy_alpha_beta)
    else:
        plan = mg_wfbp_plan(grads, forward_s, plan_comm)
    return send_fifo(plan, forward_s, backward_s, comm, costs=costs)
