"""Deep Gradient Compression: momentum-corrected, sampled-threshold sparsification.

Paper: Y. Lin, S. Han, H. Mao, Y. Wang and W. J. Dally, "Deep gradient compression: reducing the
communication bandwidth for distributed training", ICLR 2018.

Algorithm, per step for tensor ``name`` (state u, v start at zero):

1. local gradient clipping (optional): g <- g * min(1, clip_norm / ||g||); the paper clips each
   worker's gradient against the global threshold scaled by N**-1/2, so pass that value;
2. momentum correction: u <- m u + g (velocity), v <- v + u (accumulation);
3. density for this step: during warm-up the density falls exponentially, 25%, 6.25%, 1.5625%
   ... (75%, 93.75%, 98.4375% sparsity, the paper's schedule), in equal stages spread over
   ``warmup_steps`` steps, until ``ratio``; k = max(1, ceil(density * numel));
4. threshold by sampling: draw ``sample_ratio`` of the entries, take the ceil(density * samples)
   -th largest |v| among them as the threshold, select |v| >= threshold; if that selects more than
   k, keep the exact top-k of the selection (the paper's hierarchical selection);
5. send the selected (value, index) pairs, padded with (0, 0) pairs to exactly k, so every rank's
   message has the same size (the paper sends fewer when the sample overestimates the threshold;
   padding trades those bytes for a fixed-size all-gather);
6. momentum factor masking: u <- 0 and v <- 0 where sent; the rest of v waits for later steps.

DGC's momentum lives inside the compressor: the optimizer must then be plain SGD *without*
momentum (as in the paper), or momentum is applied twice. The accumulation v is DGC's own error
feedback, so no ErrorFeedback wrapper is needed. u and v are kept in the gradient's dtype.

Communication cost (cost model ``dgc``, variant ``ring-allgather``): supports differ across
ranks, so the k pairs are all-gathered: (p - 1) k (w_v + w_i) bytes per rank, with k the count
for the step's density (during warm-up k is larger than the model's steady-state k).

Example::

    dgc = get("dgc", ratio=0.001, momentum=0.9, warmup_steps=4 * steps_per_epoch)
    allreduce_compressed(grad, dgc, name="fc.weight")   # then torch.optim.SGD(momentum=0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.random_k import derived_generator
from reference_impls.registry import reference_impl

WARMUP_FACTOR = 0.25  # density multiplier per warm-up stage (the paper's 75%, 93.75%, ...)


@dataclass(frozen=True)
class DGCContext:
    shape: torch.Size
    dtype: torch.dtype


@register_compressor("dgc")
@reference_impl
class DGC(Compressor):
    """Deep Gradient Compression with momentum correction, clipping, masking and warm-up."""

    communication = "allgather"
    unbiased = False

    def __init__(
        self,
        ratio: float = 0.001,  # final density (0.1% in the paper)
        momentum: float = 0.9,
        clip_norm: float | None = None,  # per-tensor L2 threshold for local clipping
        warmup_steps: int = 0,  # steps over which the density decays exponentially to ratio
        sample_ratio: float = 0.01,  # fraction of entries sampled to estimate the threshold
        seed: int = 0,  # sampling stream (a private generator per tensor and step)
        index_dtype: torch.dtype = torch.int32,
    ) -> None:
        checks = [
            ("ratio", ratio, isinstance(ratio, int | float) and 0 < ratio <= 1, "in (0, 1]"),
            ("momentum", momentum, isinstance(momentum, int | float) and 0 <= momentum < 1,
             "in [0, 1)"),
            ("clip_norm", clip_norm,
             clip_norm is None or (isinstance(clip_norm, int | float) and 0 < clip_norm < math.inf),
             "None or a finite number > 0"),
            ("warmup_steps", warmup_steps,
             isinstance(warmup_steps, int) and not isinstance(warmup_steps, bool)
             and warmup_steps >= 0, "an int >= 0"),
            ("sample_ratio", sample_ratio,
             isinstance(sample_ratio, int | float) and 0 < sample_ratio <= 1, "in (0, 1]"),
            ("seed", seed, isinstance(seed, int), "an int"),
            ("index_dtype", index_dtype, index_dtype in (torch.int32, torch.int64),
             "torch.int32 or torch.int64"),
        ]  # fmt: skip
        for argument, value, ok, wanted in checks:
            if not ok:
                raise ValueError(f"DGC: {argument} must be {wanted}, got {value!r}")
        self.ratio, self.momentum, self.clip_norm = float(ratio), float(momentum), clip_norm
        self.warmup_steps, self.sample_ratio, self.seed = warmup_steps, float(sample_ratio), seed
        self.index_dtype = index_dtype
        self.velocity: dict[str, torch.Tensor] = {}
        self.accumulation: dict[str, torch.Tensor] = {}
        self.steps: dict[str, int] = {}

    # --- schedule ------------------------------------------------------------------------------
    def warmup_stages(self) -> int:
        """Number of warm-up densities 0.25, 0.25**2, ... that are still above ``ratio``."""
        stages = 0
        while WARMUP_FACTOR ** (stages + 1) > self.ratio:
            stages += 1
        return stages

    def density_at(self, step: int) -> float:
        """Fraction of entries sent at ``step`` (0-based) of a tensor."""
        stages = self.warmup_stages()
        if step >= self.warmup_steps or stages == 0:
            return self.ratio
        stage = step * stages // self.warmup_steps  # equal stages over the warm-up steps
        return max(self.ratio, WARMUP_FACTOR ** (stage + 1))

    def k_at(self, step: int, numel: int) -> int:
        """How many (value, index) pairs are sent at ``step`` for ``numel`` entries."""
        if numel == 0:
            return 0
        return min(numel, max(1, math.ceil(self.density_at(step) * numel)))

    # --- compression ---------------------------------------------------------------------------
    def _select(self, accumulated: torch.Tensor, k: int, name: str, step: int) -> torch.Tensor:
        """Indices to send: sampled threshold, then exact top-k if it let too many through."""
        magnitude = accumulated.abs()
        numel = magnitude.numel()
        samples = min(numel, max(1, math.ceil(self.sample_ratio * numel)))
        if samples < numel:
            generator = derived_generator(magnitude.device, "dgc", self.seed, name, step)
            positions = torch.randint(
                numel, (samples,), generator=generator, device=magnitude.device
            )
            sample = magnitude[positions]
        else:
            sample = magnitude  # small tensors: the "sample" is everything, the threshold exact
        sample_k = min(samples, max(1, math.ceil(k / numel * samples)))
        threshold = sample.topk(sample_k, sorted=False).values.min()
        selected = torch.nonzero(magnitude >= threshold).view(-1)
        if selected.numel() > k:
            selected = selected[magnitude[selected].topk(k, sorted=False).indices]
        return selected

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, DGCContext]:
        flat = tensor.reshape(-1)
        numel = flat.numel()
        if self.index_dtype == torch.int32 and numel >= 2**31:
            raise ValueError("DGC: tensors of 2**31 or more elements need index_dtype=int64")
        velocity, accumulation = self.velocity.get(name), self.accumulation.get(name)
        if velocity is None or accumulation is None:
            velocity, accumulation = torch.zeros_like(flat), torch.zeros_like(flat)
        elif velocity.shape != flat.shape:
            raise ValueError(
                f"DGC: tensor {name!r} changed from {velocity.numel()} to {numel} elements; "
                "use a distinct name per tensor"
            )
        step = self.steps.get(name, 0)
        gradient = flat
        if self.clip_norm is not None and numel:
            # min(1, c / ||g||) without a host sync; the epsilon keeps ||g|| = 0 finite.
            scale = (self.clip_norm / (flat.norm() + 1e-12)).clamp(max=1.0)
            gradient = flat * scale.to(flat.dtype)
        velocity = self.momentum * velocity + gradient
        accumulation = accumulation + velocity
        k = self.k_at(step, numel)
        values = torch.zeros(k, dtype=flat.dtype, device=flat.device)
        indices = torch.zeros(k, dtype=self.index_dtype, device=flat.device)
        if k:
            selected = self._select(accumulation, k, name, step)
            values[: selected.numel()] = accumulation[selected]
            indices[: selected.numel()] = selected.to(self.index_dtype)
            velocity[selected] = 0  # momentum factor masking
            accumulation[selected] = 0
        self.velocity[name], self.accumulation[name] = velocity, accumulation
        self.steps[name] = step + 1
        return (values, indices), DGCContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: DGCContext) -> torch.Tensor:
        values, indices = payload
        dense = torch.zeros(ctx.shape.numel(), dtype=ctx.dtype, device=values.device)
        dense.index_add_(0, indices.long(), values.to(ctx.dtype))  # padding adds zeros at 0
        return dense.view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype, step: int | None = None) -> int:
        """Bytes of one rank's payload; ``step`` None means after the warm-up."""
        k = self.k_at(self.warmup_steps if step is None else step, numel)
        value_bytes = torch.empty((), dtype=dtype).element_size()
        return k * (value_bytes + torch.empty((), dtype=self.index_dtype).element_size())

    # --- checkpointing -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "velocity": {name: t.clone() for name, t in self.velocity.items()},
            "accumulation": {name: t.clone() for name, t in self.accumulation.items()},
            "steps": dict(self.steps),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != {"velocity", "accumulation", "steps"}:
            raise ValueError(
                "DGC.load_state_dict: expected keys velocity, accumulation, steps; "
                f"got {list(state)}"
            )
        if set(state["velocity"]) != set(state["accumulation"]):
            raise ValueError("DGC.load_state_dict: velocity and accumulation name other tensors")
        tensors = [*state["velocity"].values(), *state["accumulation"].values()]
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError("DGC.load_state_dict: velocity and accumulation must hold tensors")
        self.velocity = {name: t.clone() for name, t in state["velocity"].items()}
        self.accumulation = {name: t.clone() for name, t in state["accumulation"].items()}
        self.steps = dict(state["steps"])
