"""A parameter-free layer whose backward sleeps: a stand-in for a layer with a long backward, so
that gradients of the layers after it are ready early (scheduler overlap tests and benchmarks).
"""

from __future__ import annotations

import time

import torch


class _Delay(torch.autograd.Function):
    """Identity forward; backward sleeps ``seconds`` and passes the gradient through."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, seconds: float) -> torch.Tensor:
        ctx.seconds = seconds
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        time.sleep(ctx.seconds)
        return grad, None


class SleepInBackward(torch.nn.Module):
    """Identity module whose backward takes ``seconds`` of wall time and no parameters."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Delay.apply(x, self.seconds)
