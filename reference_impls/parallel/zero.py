"""ZeRO: data parallelism whose optimizer states, gradients and parameters are sharded by rank.

Paper: S. Rajbhandari, J. Rasley, O. Ruwase and Y. He, "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", SC '20 (IEEE/ACM), arXiv:1910.02054.

Layout: every *unit* (a module with parameters of its own, e.g. each ``nn.Linear``) flattens
its parameters into one buffer, zero-padded to a multiple of p, cut into p equal chunks; rank r
owns chunk r as a parameter of its own (:attr:`_Unit.shard`), and the wrapped
``torch.optim`` optimizer sees only these shards, so its states (Adam's moments, momentum)
exist once across the ranks.

Algorithm per step (p ranks, each with its own micro-batch, loss averaged over ranks):

1. Stage 1 (optimizer states): backward as usual, every rank keeps the full local gradient;
   at :meth:`ZeroOptimizer.step` each unit's flat gradient is ring reduce-scattered (rank r
   gets the sum of chunk r) and divided by p.
2. Stage 2 (+ gradients): the same reduce-scatter runs inside backward, as soon as the last
   gradient of a unit arrives (a post-accumulate-grad hook), and the full gradients are freed
   at once, so a rank holds only its gradient shards.
3. Stages 1 and 2 then step the shard optimizer and ring all-gather each unit's chunks back into
   the module's parameters.
4. Stage 3 (+ parameters): the module keeps only empty placeholders. A unit's forward
   all-gathers its parameters, runs and frees them; its backward all-gathers them again,
   recomputes the unit's forward to get the gradients, frees the parameters and
   reduce-scatters the gradient into the shard. The step updates the shards only.

Communication cost per rank and step (cost model ``zero``): a reduce-scatter and an all-gather
of each unit's padded n_u bytes for stages 1-2, 2 (p-1)/p n_u (variant ``stage-1-2``); one more
all-gather for stage 3, 3 (p-1)/p n_u (variant ``stage-3``). Summed over units this is the
model's volume with n the padded parameter bytes (n itself when p divides every unit's numel).

Differences from the paper: no bucketing, prefetching or overlap; stage 3 recomputes a unit's
forward in its backward (like activation checkpointing) so that nothing but the unit's input
is kept, where ZeRO keeps the activations and only gathers the parameters again; the wire
traffic is the same. All ranks must start from the same parameters (as with DDP).

Example::

    model = nn.Sequential(nn.Linear(4, 5), nn.GELU(), nn.Linear(5, 3))
    zero = ZeroOptimizer(model, stage=3, optimizer_cls=torch.optim.Adam, lr=1e-3)
    loss_fn(model(x_local), y_local).backward(); zero.step(); zero.zero_grad()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from reference_impls.collectives.ring import ring_allgather, ring_reduce_scatter
from reference_impls.registry import reference_impl


@dataclass
class _Unit:
    """One module whose own parameters are flattened, padded and sharded together."""

    module: nn.Module
    names: list[str]  # its direct parameters, in flat-buffer order
    shapes: list[torch.Size]
    numel: int  # real elements (before padding)
    shard: nn.Parameter  # this rank's chunk of the padded flat buffer: what the optimizer steps
    forward: Callable[..., Any]  # the module's own forward (stage 3 wraps it)
    reduced: bool = False  # gradient reduce-scattered since the last step
    waiting: int = 0  # stage 2: gradients of this unit still to arrive in this backward


class _Stage3Call(torch.autograd.Function):
    """Gather parameters, run the unit, free them; in backward gather, recompute, scatter."""

    @staticmethod
    def forward(
        ctx: Any, shard: torch.Tensor, owner: ZeroOptimizer, unit: _Unit, *inputs: torch.Tensor
    ) -> Any:
        ctx.owner, ctx.unit = owner, unit
        ctx.save_for_backward(*inputs)  # only the input is kept; the parameters are freed
        return owner._run(unit, owner._gather(unit), inputs)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        owner, unit = ctx.owner, ctx.unit
        needs = ctx.needs_input_grad[3:]
        inputs = [
            x.detach().requires_grad_(n) for x, n in zip(ctx.saved_tensors, needs, strict=True)
        ]
        params = [t.requires_grad_(True) for t in owner._gather(unit)]
        with torch.enable_grad():
            output = owner._run(unit, params, inputs)
            wanted = params + [x for x in inputs if x.requires_grad]
            grads = torch.autograd.grad(output, wanted, grad_output, allow_unused=True)
        shard_grad = owner._reduce(unit, list(grads[: len(params)]))
        input_grads = iter(grads[len(params) :])
        return shard_grad, None, None, *(next(input_grads) if need else None for need in needs)


@reference_impl
class ZeroOptimizer:
    """Shard ``optimizer_cls``'s state (stage 1), gradients (2) and parameters (3) of ``module``.

    Every rank of ``group`` wraps an identical ``module``, runs forward and backward on its own
    data and calls :meth:`step` together with the others.
    """

    def __init__(
        self,
        module: nn.Module,
        stage: int,
        optimizer_cls: type[torch.optim.Optimizer] = torch.optim.Adam,
        group: dist.ProcessGroup | None = None,
        **optimizer_kwargs: Any,
    ) -> None:
        if stage not in (1, 2, 3):
            raise ValueError(f"ZeroOptimizer: stage must be 1, 2 or 3, got {stage!r}")
        if not isinstance(module, nn.Module):
            raise TypeError(f"ZeroOptimizer: module must be an nn.Module, got {type(module)}")
        self.module, self.stage, self.group = module, stage, group
        self.world, self.rank = dist.get_world_size(group), dist.get_rank(group)
        owners = [m for m in module.modules() if any(v is not None for v in m._parameters.values())]
        self.units = [self._shard(m) for m in owners]
        if not self.units:
            raise ValueError("ZeroOptimizer: module has no parameters to shard")
        self.optimizer = optimizer_cls([u.shard for u in self.units], **optimizer_kwargs)

    # --- layout ----------------------------------------------------------------------------
    def _shard(self, module: nn.Module) -> _Unit:
        named = [(n, p) for n, p in module._parameters.items() if p is not None]
        if len({(p.dtype, p.device) for _, p in named}) > 1:
            raise TypeError(f"ZeroOptimizer: parameters of {module} differ in dtype or device")
        flat = torch.cat([p.detach().reshape(-1) for _, p in named])
        numel = flat.numel()
        chunk = -(-numel // self.world)
        padded = torch.zeros(chunk * self.world, dtype=flat.dtype, device=flat.device)
        padded[:numel] = flat
        shard = nn.Parameter(padded[self.rank * chunk : (self.rank + 1) * chunk].clone())
        unit = _Unit(
            module, [n for n, _ in named], [p.shape for _, p in named], numel, shard, module.forward
        )
        if self.stage == 2:
            for _, param in named:
                param.register_post_accumulate_grad_hook(lambda _p, u=unit: self._arrived(u))
            unit.waiting = len(named)
        if self.stage == 3:
            for name in unit.names:  # the full parameters leave the module for good
                del module._parameters[name]
            self._bind(unit, self._placeholders(unit))

            def forward(*inputs: Any, unit: _Unit = unit) -> Any:
                return _Stage3Call.apply(unit.shard, self, unit, *inputs)

            module.forward = forward
        return unit

    def _placeholders(self, unit: _Unit) -> list[torch.Tensor]:
        return [unit.shard.new_empty(0) for _ in unit.names]

    def _bind(self, unit: _Unit, tensors: list[torch.Tensor]) -> None:
        for name, tensor in zip(unit.names, tensors, strict=True):
            setattr(unit.module, name, tensor)

    def _run(self, unit: _Unit, params: list[torch.Tensor], inputs: Any) -> Any:
        """Stage 3: call the unit's own forward with ``params`` bound, then free them again."""
        self._bind(unit, params)
        try:
            return unit.forward(*inputs)
        finally:
            self._bind(unit, self._placeholders(unit))

    # --- communication ---------------------------------------------------------------------
    def _gather(self, unit: _Unit) -> list[torch.Tensor]:
        """All-gather the unit's chunks; its parameters as views of one new flat buffer."""
        flat = ring_allgather(unit.shard.detach(), self.group).reshape(-1)[: unit.numel]
        return [
            t.view(s)
            for t, s in zip(flat.split([s.numel() for s in unit.shapes]), unit.shapes, strict=True)
        ]

    def _reduce(self, unit: _Unit, grads: list[torch.Tensor | None]) -> torch.Tensor:
        """Reduce-scatter the unit's gradients (None: zero): this rank's chunk of their mean."""
        chunk = unit.shard.numel()
        flat = torch.zeros(chunk * self.world, dtype=unit.shard.dtype, device=unit.shard.device)
        offset = 0  # the padding and missing gradients stay zero
        for grad, shape in zip(grads, unit.shapes, strict=True):
            if grad is not None:
                flat[offset : offset + shape.numel()].copy_(grad.reshape(-1))
            offset += shape.numel()
        return ring_reduce_scatter(flat, self.group).div_(self.world)

    def _reduce_into_shard(self, unit: _Unit) -> None:
        """Stages 1 and 2: reduce the module's gradients and accumulate into the shard's."""
        params = [unit.module._parameters[n] for n in unit.names]
        reduced = self._reduce(unit, [p.grad for p in params])
        shard = unit.shard
        shard.grad = reduced if shard.grad is None else shard.grad.add_(reduced)
        unit.reduced = True
        if self.stage == 2:  # each rank keeps only its shard of the gradient
            for param in params:
                param.grad = None
            unit.waiting = len(params)

    def _arrived(self, unit: _Unit) -> None:
        unit.waiting -= 1
        if unit.waiting == 0:
            self._reduce_into_shard(unit)

    # --- the optimizer interface -----------------------------------------------------------
    @torch.no_grad()
    def step(self) -> None:
        """Reduce what backward has not reduced yet, step the shards, refresh the parameters."""
        if self.stage in (1, 2):
            for unit in self.units:
                if not unit.reduced:
                    self._reduce_into_shard(unit)
        self.optimizer.step()
        for unit in self.units:
            unit.reduced = False
            if self.stage in (1, 2):
                for name, value in zip(unit.names, self._gather(unit), strict=True):
                    unit.module._parameters[name].copy_(value)

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        for unit in self.units:
            if self.stage in (1, 2):
                for name in unit.names:
                    unit.module._parameters[name].grad = None
                unit.waiting = len(unit.names)

    def full_parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter of the module, gathered (a collective in stage 3), by qualified name."""
        names = {id(m): prefix for prefix, m in self.module.named_modules()}
        out = {}
        for unit in self.units:
            prefix = names[id(unit.module)]
            values = (
                self._gather(unit)
                if self.stage == 3
                else [unit.module._parameters[n].detach() for n in unit.names]
            )
            for name, value in zip(unit.names, values, strict=True):
                out[f"{prefix}.{name}" if prefix else name] = value.clone()
        return out
