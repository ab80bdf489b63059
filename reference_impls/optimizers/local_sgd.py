"""Local SGD: every rank steps alone and the models are averaged once every H steps.

Paper: S. U. Stich, "Local SGD Converges Fast and Communicates Little", ICLR 2019,
arXiv:1805.09767.

Algorithm (p ranks, period H):

1. Every rank runs its own optimizer (any ``torch.optim.Optimizer``) on its own data; nothing
   is communicated.
2. After every H-th local step the ranks average their parameters: all of them are flattened
   into one buffer, summed with the reference ring all-reduce and divided by p, so right after
   an averaging step every rank holds the same model, bit for bit.
3. Optimizer buffers (momentum, Adam's moments) stay local by default, as in Stich's analysis,
   which averages only the iterates. ``average_optimizer_state=True`` also averages every
   floating-point state tensor shaped like its parameter, in the same all-reduce (more bytes).

With H = 1 and plain SGD this is synchronous data-parallel SGD: averaging x - lr g_i over the
ranks equals x - lr * mean_i g_i, up to the rounding of the different summation order.

Communication cost per rank (cost model ``local-sgd``, variant ``ring``): nothing on the H - 1
local steps; one ring all-reduce of the n-byte model on the averaging step, 2 (p-1)/p n bytes
(exact when p divides the element count), i.e. 2 (p-1)/p n / H per step on average.

Example::

    optimizer = LocalSGD(torch.optim.SGD(model.parameters(), lr=0.1), period=8)
    loss.backward(); optimizer.step(); optimizer.zero_grad()   # averages on steps 8, 16, ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allreduce
from reference_impls.registry import reference_impl


@reference_impl
class LocalSGD:
    """Wrap ``optimizer`` so that the parameters of ``group`` are averaged every ``period`` steps.

    Every rank must call :meth:`step` the same number of times (the averaging step is a
    collective). All parameters share one dtype and device (they travel as one flat buffer).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        period: int,
        group: dist.ProcessGroup | None = None,
        average_optimizer_state: bool = False,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                "LocalSGD: optimizer must be a torch.optim.Optimizer, "
                f"got {type(optimizer).__name__}"
            )
        if not isinstance(period, int) or period < 1:
            raise ValueError(f"LocalSGD: period (H) must be an int >= 1, got {period!r}")
        self.optimizer = optimizer
        self.period = period
        self.group = group
        self.average_optimizer_state = average_optimizer_state
        self.local_steps = 0  # optimizer steps taken so far; averaging after each H-th

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The wrapped optimizer's parameter groups (learning-rate schedulers use these)."""
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One local step; every ``period``-th call then averages the models of all ranks."""
        loss = self.optimizer.step(closure)
        self.local_steps += 1
        if self.local_steps % self.period == 0:
            self.average()
        return loss

    def _averaged_tensors(self) -> list[torch.Tensor]:
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        tensors = list(params)
        if self.average_optimizer_state:
            for param in params:
                for value in self.optimizer.state.get(param, {}).values():
                    # Only per-element buffers: step counters and scalars are not averaged.
                    if isinstance(value, torch.Tensor) and value.shape == param.shape:
                        tensors.append(value)
        if len({(t.dtype, t.device) for t in tensors}) > 1:
            raise TypeError(
                "LocalSGD: parameters (and averaged buffers) must share dtype and device"
            )
        return tensors

    @torch.no_grad()
    def average(self) -> None:
        """Replace every rank's parameters by their mean over ``group`` (one ring all-reduce)."""
        tensors = self._averaged_tensors()
        if not tensors:
            return
        flat = torch.cat([t.reshape(-1) for t in tensors])
        ring_allreduce(flat, self.group)
        flat.div_(dist.get_world_size(self.group))
        offset = 0
        for tensor in tensors:
            tensor.copy_(flat[offset : offset + tensor.numel()].view_as(tensor))
            offset += tensor.numel()

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "local_steps": self.local_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != {"optimizer", "local_steps"}:
            raise ValueError(
                f"LocalSGD.load_state_dict: expected keys optimizer, local_steps; got {list(state)}"
            )
        self.optimizer.load_state_dict(state["optimizer"])
        self.local_steps = int(state["local_steps"])
