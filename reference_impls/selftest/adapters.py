"""Self-test checks for error feedback and the two ways a compressor meets a training loop:
``aggregate_gradients`` (after ``backward()``) and ``ddp_comm_hook`` (inside DDP).

Error feedback must keep base.py's contract (total == sum of the ranks' locals) and never lose
mass: input + old residual == local + new residual, bitwise, for an all-gather compressor (top-k)
and a custom-pattern one (threshold). The adapters run TopK(ratio=1), which drops nothing, on
small-integer gradients, so they must reproduce ``dist.all_reduce`` / p exactly (DDP: to a
rounding, see the check).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from reference_impls.compression import ErrorFeedback, TopK, ddp_comm_hook, get
from reference_impls.compression.adapters import aggregate_gradients
from reference_impls.selftest.core import Check, CheckContext


def _check_error_feedback(ctx: CheckContext) -> None:
    inners = {"topk": ("topk-sparsification", {"ratio": 0.25}),
              "threshold": ("threshold-sparsification", {"tau": 0.5})}  # fmt: skip
    for label, (record_id, config) in inners.items():
        ef = ErrorFeedback(get(record_id, **config))
        residual = torch.zeros(30, device=ctx.device)
        for step in range(3):
            data = ctx.normals((30,), salt=step)
            result = ef.aggregate(data.clone(), "w", ctx.group)
            what = f"{label} step {step}"
            if not torch.equal(data + residual, result.local + ef.residuals["w"]):
                ctx.fail(f"{what}: input + old residual != local + new residual")
            residual = ef.residuals["w"].clone()
            expected = torch.zeros_like(data)
            for local in ctx.gather(result.local):
                expected += local
            tol = 2 * ctx.world * torch.finfo(torch.float32).eps * expected.abs().max().item()
            ctx.compare(result.total, expected, tol, f"{what}: total vs sum of locals")
            ctx.same_on_all_ranks(result.total, f"{what}: total")


def _check_aggregate_gradients(ctx: CheckContext) -> None:
    """TopK(ratio=1) drops nothing: grads must become dist.all_reduce / p exactly (integers)."""
    for bucket_bytes in (None, 40):
        model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Linear(3, 2)).to(ctx.device)
        model[1].bias.requires_grad_(False)  # a parameter without a gradient is skipped
        expected = []
        for index, parameter in enumerate(p for p in model.parameters() if p.requires_grad):
            grad = ctx.small_ints(parameter.numel(), torch.float32, salt=index)
            parameter.grad = grad.view(parameter.shape)
            mean = parameter.grad.clone()
            dist.all_reduce(mean, group=ctx.group)
            expected.append(mean / ctx.world)
        aggregate_gradients(model, TopK(ratio=1.0), ctx.group, bucket_bytes=bucket_bytes)
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        for index, (got, want) in enumerate(zip(grads, expected, strict=True)):
            ctx.compare(got, want, 0.0, f"bucket_bytes={bucket_bytes} parameter {index}")
        if model[1].bias.grad is not None:
            ctx.fail("a parameter without gradient got one")


def _check_ddp_hook(ctx: CheckContext) -> None:
    """DDP with ddp_comm_hook(TopK(ratio=1)) must give plain DDP's gradients."""
    grads = []
    for hook in (None, ddp_comm_hook(TopK(ratio=1.0), ctx.group)):
        net = torch.nn.Linear(4, 3, bias=False).to(ctx.device)
        with torch.no_grad():  # the same weights on every rank, as DDP requires
            net.weight.copy_(ctx.small_ints(12, torch.float32, rank=0).view(3, 4))
        ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        model = DistributedDataParallel(net, device_ids=ids, process_group=ctx.group)
        if hook is not None:
            model.register_comm_hook(state=None, hook=hook)
        model(ctx.small_ints(8, torch.float32, salt=5).view(2, 4)).sum().backward()
        grads.append(net.weight.grad.clone())
    # DDP divides each gradient by p before summing, the hook after: a rounding apart when p is
    # not a power of two.
    tol = 4 * ctx.world * torch.finfo(torch.float32).eps * grads[0].abs().max().item()
    ctx.compare(grads[1], grads[0], tol, "hooked vs plain DDP gradient")


#: add a Check here to cover a new adapter or wrapper
CHECKS: list[Check] = [
    Check("ErrorFeedback", "topk/threshold: mass kept, total == sum of locals",
          _check_error_feedback),
    Check("aggregate_gradients", "TopK(1) per param + buckets vs all_reduce/p",
          _check_aggregate_gradients),
    Check("ddp_comm_hook", "DDP + TopK(1) hook vs plain DDP", _check_ddp_hook),
]  # fmt: skip


def checks() -> list[Check]:
    return list(CHECKS)
