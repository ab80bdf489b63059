"""Self-test checks for every compressor in ``reference_impls.compression.available()``.

The generic compressor check holds :meth:`Compressor.aggregate` to its contract: ``total`` equals
the sum over ranks of every rank's ``local`` (gathered with ``dist.all_gather``) and is bitwise the
same on every rank. Shapes (0,), (1,), (7,) and (12, 10), each aggregated twice under one name so
stateful compressors (error feedback, momentum, warm-up) use their state. Tolerance: the total may
be computed in another order or in the payload's precision (fp16 payloads are summed in fp16), so
|total - sum(local)| <= 2 p eps * max(sum_r |local_r|), eps the coarsest float precision among the
payload parts and the input; compressors whose payloads are gathered and decompressed one by one
meet it with error 0.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import torch

from reference_impls.compression import Compressor, available, get
from reference_impls.compression.catalog import record_of
from reference_impls.selftest.core import Check, CheckContext, CheckFailed

#: constructor arguments for compressors without usable defaults; others are built with get(id)
CONFIG: dict[str, dict[str, Any]] = {
    "topk-sparsification": {"ratio": 0.25},
    "gtopk": {"ratio": 0.25},
    "random-k": {"ratio": 0.25},
    "threshold-sparsification": {"tau": 0.5},
    "dgc": {"ratio": 0.25},
}
SHAPES = [(0,), (1,), (7,), (12, 10)]


def _coarsest_eps(payload: tuple[torch.Tensor, ...], dtype: torch.dtype) -> float:
    floats = [part.dtype for part in payload if part.is_floating_point()]
    return max(torch.finfo(d).eps for d in [dtype, *floats])


def _sum_of_locals(
    ctx: CheckContext,
    total: torch.Tensor,
    locals_: list[torch.Tensor],
    compressor: Compressor,
    eps: float,
    what: str,
) -> None:
    """base.py's contract: total is the sum over ranks of each rank's local."""
    expected = torch.zeros_like(total)
    for local in locals_:  # rank order, as the all-gather pattern sums
        expected += local
    scale = torch.stack([x.abs() for x in locals_]).sum(0).max().item() if total.numel() else 0
    ctx.compare(total, expected, 2 * ctx.world * eps * scale, f"{what}: total vs sum of locals")


def _majority_of_signs(
    ctx: CheckContext,
    total: torch.Tensor,
    locals_: list[torch.Tensor],
    compressor: Compressor,
    eps: float,
    what: str,
) -> None:
    """signSGD's vote is not a sum: local is this rank's signs (+-1), total = p * majority sign,
    a tie (even p) counting as +1. Exact: small integers."""
    votes = torch.stack(locals_).sum(0)
    expected = ctx.world * torch.where(votes < 0, -1.0, 1.0).to(total.dtype)
    ctx.compare(total, expected, 0.0, f"{what}: total vs p * majority of local signs")


def _global_topk_merge(
    ctx: CheckContext,
    total: torch.Tensor,
    locals_: list[torch.Tensor],
    compressor: Compressor,
    eps: float,
    what: str,
) -> None:
    """gTop-k drops entries in early merges that a later merge may bring back from other ranks,
    so total is not the sum of locals (local = what this rank sent at the global indices).
    Held instead: at most k entries; a rank's local is nonzero only where total is; each entry of
    total is the sum of the values that some non-empty subset of those ranks sent (tried for
    p <= 8: 2**p subsets)."""
    flat, stacked = total.reshape(-1), torch.stack([x.reshape(-1) for x in locals_])
    k = compressor.k_for(flat.numel())  # type: ignore[attr-defined]
    if int((flat != 0).sum()) > k:
        ctx.fail(f"{what}: total has {int((flat != 0).sum())} nonzeros > k = {k}")
    if bool(((stacked != 0) & (flat == 0)).any()):
        ctx.fail(f"{what}: a rank's local is nonzero where total is zero")
    if ctx.world > 8:
        return
    support = torch.nonzero(flat).view(-1).tolist()
    closest = flat.clone()  # per entry of total, the subset sum of sent values nearest to it
    for index in support:
        senders = [v for v in stacked[:, index].tolist() if v != 0]
        sums = [sum(c) for n in range(1, len(senders) + 1) for c in combinations(senders, n)]
        closest[index] = min(sums, key=lambda s: abs(s - flat[index].item()), default=0.0)
    tol = 2 * ctx.world * eps * (stacked.abs().sum(0).max().item() if flat.numel() else 0)
    ctx.compare(flat[support], closest[support], tol, f"{what}: total vs nearest subset sum")


#: record id -> how its total relates to the ranks' locals (a label for the table, the rule);
#: default: their sum, base.py's contract. A compressor whose aggregation is not linear adds one.
AGGREGATION_RULES: dict[str, tuple[str, Callable[..., None]]] = {
    "signsgd": ("aggregate: total == p * majority of local signs", _majority_of_signs),
    "gtopk": ("aggregate: k-sparse, entries are sums of sent values", _global_topk_merge),
}
_DEFAULT_RULE = ("aggregate: total == sum of ranks' local, same on all", _sum_of_locals)


def _check_compressor(record_id: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        try:
            compressor = get(record_id, **CONFIG.get(record_id, {}))
        except (TypeError, ValueError) as error:
            raise CheckFailed(
                f"get({record_id!r}) failed ({error}); add its arguments to CONFIG in "
                "reference_impls/selftest/compression.py"
            ) from error
        _, rule = AGGREGATION_RULES.get(record_of(record_id), _DEFAULT_RULE)
        for shape in SHAPES:
            name = f"t{'x'.join(map(str, shape))}"
            for step in range(2):
                data = ctx.normals(shape, salt=step)
                probe, _ = get(record_id, **CONFIG.get(record_id, {})).compress(data.clone())
                result = compressor.aggregate(data.clone(), name, ctx.group)
                what = f"shape {shape} step {step}"
                if result.total.shape != data.shape or result.local.shape != data.shape:
                    raise CheckFailed(f"{what}: total/local shapes differ from the input's")
                locals_ = ctx.gather(result.local)
                eps = _coarsest_eps(probe, data.dtype)
                rule(ctx, result.total, locals_, compressor, eps, what)
                ctx.same_on_all_ranks(result.total, f"{what}: total")

    return check


def checks() -> list[Check]:
    """The generic check for each compressor that ``available()`` lists."""
    return [
        Check(
            record_id,
            AGGREGATION_RULES.get(record_of(record_id), _DEFAULT_RULE)[0],
            _check_compressor(record_id),
        )
        for record_id in available()
    ]
