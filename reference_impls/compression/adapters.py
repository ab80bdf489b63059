"""Plug a compressor into a plain training loop: average gradients after ``backward()``.

:func:`aggregate_gradients` is the framework-free counterpart of
:func:`~reference_impls.compression.ddp_hook.ddp_comm_hook`: no ``DistributedDataParallel``, one
call between ``loss.backward()`` and ``optimizer.step()``. It replaces every parameter's gradient
by the mean over the ranks of the group of what the compressor lets through, via
:func:`~reference_impls.compression.exchange.allreduce_compressed`.

Steps:

1. Collect the parameters that have a gradient, in ``model.named_parameters()`` order
   (parameters without one are skipped; every rank must skip the same ones, as with DDP's
   ``find_unused_parameters=False``, or the ranks' messages stop matching).
2. Per parameter (``bucket_bytes=None``): exchange its gradient under the parameter's name, so
   stateful compressors (error feedback, PowerSGD's warm start) keep one state per parameter.
   With ``bucket_bytes``: concatenate consecutive gradients of one dtype and device into flat
   buckets of at most ``bucket_bytes`` bytes (a larger gradient gets a bucket of its own),
   exchange each bucket under a name built from the parameter names it holds, copy back.
3. Each exchange replaces the gradient by the mean (``allreduce_compressed(average=True)``).

Communication cost: the compressor's cost for each exchanged tensor (see its record's cost
model), once per parameter, or once per bucket. Buckets cut the number of exchanges, hence the
latency terms, from the number of parameters to about total bytes / ``bucket_bytes``; the volume
stays that of the compressor on the same number of elements (top-k then picks its k over the whole
bucket, not per parameter). With ``COMMATLAS_CHECKS=1`` every exchange is preceded by
:func:`~reference_impls.comm.checks.check_same_layout`, which turns ranks that disagree on the
gradients into a ``ValueError`` instead of a hang.

Example::

    compressor = get("topk-sparsification", ratio=0.01, error_feedback=True)
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()
        aggregate_gradients(model, compressor)            # grads become the compressed mean
        optimizer.step()
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.comm.checks import check_same_layout
from reference_impls.compression.base import Compressor
from reference_impls.compression.exchange import allreduce_compressed


def _grads_to_exchange(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    named = []
    for name, parameter in model.named_parameters():
        if parameter.grad is None:
            continue
        if parameter.grad.is_sparse:
            raise TypeError(f"aggregate_gradients: parameter {name!r} has a sparse gradient")
        named.append((name, parameter.grad))
    return named


def _buckets(
    named: list[tuple[str, torch.Tensor]], bucket_bytes: int
) -> list[list[tuple[str, torch.Tensor]]]:
    """Consecutive gradients of one dtype and device, at most ``bucket_bytes`` per bucket."""
    buckets: list[list[tuple[str, torch.Tensor]]] = []
    size = 0
    for name, grad in named:
        nbytes = grad.numel() * grad.element_size()
        current = buckets[-1] if buckets else None
        fits = (
            current is not None
            and current[0][1].dtype == grad.dtype
            and current[0][1].device == grad.device
            and size + nbytes <= bucket_bytes
        )
        if fits:
            current.append((name, grad))  # type: ignore[union-attr]
            size += nbytes
        else:
            buckets.append([(name, grad)])
            size = nbytes
    return buckets


def _bucket_name(bucket: list[tuple[str, torch.Tensor]]) -> str:
    # The names it spans key the compressor's state: stable across steps as long as the same
    # parameters have gradients, and distinct from any single parameter's name.
    first, last = bucket[0][0], bucket[-1][0]
    return f"bucket[{first}..{last}]/{len(bucket)}"


def aggregate_gradients(
    model: torch.nn.Module,
    compressor: Compressor,
    group: dist.ProcessGroup | None = None,
    *,
    bucket_bytes: int | None = None,
) -> None:
    """Replace each parameter's ``.grad`` by its mean over ``group`` through ``compressor``.

    ``bucket_bytes=None`` exchanges one gradient at a time under its parameter name; a positive
    int flattens consecutive gradients into buckets of at most that many bytes first.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"aggregate_gradients: model must be a torch.nn.Module, got {type(model).__name__}"
        )
    if not isinstance(compressor, Compressor):
        raise TypeError(
            f"aggregate_gradients: compressor must be a Compressor, got {type(compressor).__name__}"
        )
    if bucket_bytes is not None and (
        isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or bucket_bytes < 1
    ):
        raise ValueError(
            "aggregate_gradients: bucket_bytes must be a positive int or None, "
            f"got {bucket_bytes!r}"
        )
    named = _grads_to_exchange(model)
    if bucket_bytes is None:
        for name, grad in named:
            check_same_layout(grad, group, f"aggregate_gradients({name})")
            allreduce_compressed(grad, compressor, group, name=name)
        return
    for bucket in _buckets(named, bucket_bytes):
        name = _bucket_name(bucket)
        flat = torch.cat([grad.reshape(-1) for _, grad in bucket])
        check_same_layout(flat, group, f"aggregate_gradients({name})")
        allreduce_compressed(flat, compressor, group, name=name)
        for (_, grad), part in zip(bucket, flat.split([g.numel() for _, g in bucket]), strict=True):
            grad.copy_(part.view(grad.shape))
