"""Megatron tensor parallelism: column- and row-parallel linear layers and the MLP block.

Paper: M. Shoeybi, M. Patwary, R. Puri, P. LeGresley, J. Casper and B. Catanzaro, "Megatron-LM:
Training Multi-Billion Parameter Language Models Using Model Parallelism", arXiv:1909.08053,
2019.

Algorithm for the MLP block Y = GeLU(X A) B on p ranks (X: tokens x h, A: h x f, B: f x h):

1. Split A by columns and B by rows into p parts (``tensor_split`` sizes: they differ by at
   most one, so f need not divide by p): rank r holds A_r and B_r.
2. ``f``: identity in forward, all-reduce in backward. X enters every rank unchanged; in the
   backward pass each rank holds only its part of dL/dX, so the parts are summed.
3. Each rank computes Z_r = GeLU(X A_r): GeLU acts element-wise, so no communication between
   the two matrix products.
4. ``g``: all-reduce in forward, identity in backward. Y = sum_r Z_r B_r (+ bias once); the
   gradient of Y is already complete on every rank.

Communication cost per rank: one ring all-reduce of the tokens x h output in forward (``g``)
and one of the tokens x h input gradient in backward (``f``), 2 (p-1)/p n bytes each with n the
activation bytes. The cost model ``megatron-tp`` (variant ``per-layer``) counts a transformer
layer, whose attention block is parallelised the same way: 4 all-reduces, so the MLP block
sends exactly half of its volume (exact when p divides the element count).

Example::

    mlp = ParallelMLP(nn.Linear(h, 4 * h), nn.Linear(4 * h, h))    # same dense layers on all ranks
    y = mlp(x)                                                       # x: (tokens, h) on every rank
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from reference_impls.collectives.ring import ring_allreduce
from reference_impls.registry import reference_impl


def _allreduce(tensor: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
    summed = tensor.contiguous().clone()  # ring_allreduce works in place; leave autograd's alone
    ring_allreduce(summed, group)
    return summed


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's ``f``: identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _allreduce(grad, ctx.group), None


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's ``g``: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: dist.ProcessGroup | None) -> torch.Tensor:
        return _allreduce(x, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def _part(size: int, group: dist.ProcessGroup | None, what: str) -> slice:
    """This rank's slice of ``size`` features (``tensor_split`` sizes)."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if size < p:
        raise ValueError(
            f"{what}: {size} features cannot be split over {p} ranks (every rank needs >= 1)"
        )
    index = torch.arange(size).tensor_split(p)[r]
    return slice(int(index[0]), int(index[-1]) + 1)


def _check_linear(linear: nn.Linear, what: str) -> None:
    if not isinstance(linear, nn.Linear):
        raise TypeError(f"{what}: expected an nn.Linear to shard, got {type(linear).__name__}")


@reference_impl(record="megatron-tp")
class ColumnParallelLinear(nn.Module):
    """Rank r's output features of ``linear`` (rows of its weight); output stays split."""

    def __init__(self, linear: nn.Linear, group: dist.ProcessGroup | None = None) -> None:
        super().__init__()
        _check_linear(linear, "ColumnParallelLinear")
        self.group = group
        self.part = _part(linear.out_features, group, "ColumnParallelLinear")
        self.weight = nn.Parameter(linear.weight.detach()[self.part].clone())
        self.bias = (
            None if linear.bias is None else nn.Parameter(linear.bias.detach()[self.part].clone())
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(CopyToTensorParallel.apply(x, self.group), self.weight, self.bias)


@reference_impl(record="megatron-tp")
class RowParallelLinear(nn.Module):
    """Rank r's input features of ``linear`` (columns of its weight); output summed by ``g``."""

    def __init__(self, linear: nn.Linear, group: dist.ProcessGroup | None = None) -> None:
        super().__init__()
        _check_linear(linear, "RowParallelLinear")
        self.group = group
        self.part = _part(linear.in_features, group, "RowParallelLinear")
        self.weight = nn.Parameter(linear.weight.detach()[:, self.part].clone())
        # The bias is added once, after the sum; every rank holds it and gets its full gradient.
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone())

    def forward(self, x_part: torch.Tensor) -> torch.Tensor:
        y = ReduceFromTensorParallel.apply(F.linear(x_part, self.weight), self.group)
        return y if self.bias is None else y + self.bias


@reference_impl
class ParallelMLP(nn.Module):
    """Megatron's MLP block: column-parallel ``fc1``, ``activation``, row-parallel ``fc2``."""

    def __init__(
        self,
        fc1: nn.Linear,
        fc2: nn.Linear,
        group: dist.ProcessGroup | None = None,
        activation: Callable[[torch.Tensor], torch.Tensor] = F.gelu,
    ) -> None:
        super().__init__()
        _check_linear(fc1, "ParallelMLP")
        _check_linear(fc2, "ParallelMLP")
        if fc1.out_features != fc2.in_features:
            raise ValueError(
                f"ParallelMLP: fc1.out_features ({fc1.out_features}) must equal "
                f"fc2.in_features ({fc2.in_features})"
            )
        self.fc1 = ColumnParallelLinear(fc1, group)
        self.fc2 = RowParallelLinear(fc2, group)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation(self.fc1(x)))
