"""Half-precision gradient communication: cast to fp16 (or bf16), all-reduce, cast back.

Papers: X. Jia et al., "Highly scalable deep learning training system with mixed-precision:
training ImageNet in four minutes", arXiv:1807.11205, 2018 (fp16 gradients on the wire);
P. Micikevicius et al., "Mixed precision training", ICLR 2018 (half-precision training with a
full-precision master copy). Stochastic rounding option: M. Hoehfeld and S. E. Fahlman,
"Probabilistic rounding in neural network learning with limited precision", Neurocomputing 4,
1992; S. Gupta et al., "Deep learning with limited numerical precision", ICML 2015.

Algorithm: 1. cast the gradient to the 16-bit ``dtype`` (round to nearest, or with
``stochastic=True`` round up with probability equal to the distance to the lower neighbour
over the gap, so the rounded value equals the input in expectation); 2. ring all-reduce the
16-bit tensor, *summing in 16 bits* as NCCL does for half tensors; 3. cast the sum back.

Accuracy: every partial sum of the ring is rounded to 16 bits, so the sum over p ranks carries up
to about (p - 1) half-ulps of relative error (2**-11 per addition for fp16, 2**-8 for bf16) on
top of the cast itself, and an fp16 sum whose magnitude exceeds 65504 becomes inf even when the
mean would fit (scale the loss or the gradients down, or use bf16, whose range is float32's).
Stochastic rounding makes the *cast* unbiased, not the 16-bit sum, which rounds to nearest.

Communication cost (cost model ``fp16-comm``, variant ``ring-allreduce``, b = 16): a ring
all-reduce of d 2-byte values, 2(p-1)/p * 2d bytes sent per rank when p divides d.

Example::

    allreduce_compressed(grad, get("fp16-comm"))                   # fp16 on the wire
    allreduce_compressed(grad, get("fp16-comm", dtype="bf16"))     # bf16 on the wire
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.random_k import default_rank, derived_generator
from reference_impls.registry import reference_impl

_DTYPE_NAMES = {
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}


@dataclass(frozen=True)
class HalfContext:
    shape: torch.Size
    dtype: torch.dtype  # the gradient's own dtype, restored by decompress


def _parse_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, str) and dtype.lower() in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype.lower()]
    if dtype in (torch.float16, torch.bfloat16):
        return dtype  # type: ignore[return-value]
    raise ValueError(
        f"HalfPrecision: dtype must be torch.float16, torch.bfloat16 or one of "
        f"{sorted(_DTYPE_NAMES)}, got {dtype!r}"
    )


def round_stochastic(
    tensor: torch.Tensor, dtype: torch.dtype, generator: torch.Generator
) -> torch.Tensor:
    """Round ``tensor`` to ``dtype`` picking one of its two neighbours at random, unbiasedly.

    With lo <= x <= hi the neighbouring values of ``dtype``, x becomes hi with probability
    (x - lo) / (hi - lo): E[result] = x. Values beyond the format's range overflow to inf as they
    do with rounding to nearest.
    """
    # The gap arithmetic is exact in the wider format (Sterbenz: x and its neighbours are close).
    wide = torch.float64 if tensor.dtype == torch.float64 else torch.float32
    x = tensor.to(wide)
    nearest = tensor.to(dtype)
    nearest_wide = nearest.to(wide)
    direction = torch.where(x > nearest_wide, torch.inf, -torch.inf).to(dtype)
    other = torch.nextafter(nearest, direction)
    p_other = (x - nearest_wide) / (other.to(wide) - nearest_wide)  # in [0, 1/2]
    draw = torch.rand(x.shape, generator=generator, device=x.device, dtype=wide)
    take_other = (draw < p_other) & torch.isfinite(nearest) & (x != nearest_wide)
    return torch.where(take_other, other, nearest)


@register_compressor("fp16-comm")
@reference_impl
class HalfPrecision(Compressor):
    """Send gradients as 16-bit floats; payloads add in place, so they ride an all-reduce."""

    communication = "allreduce"

    def __init__(
        self,
        dtype: torch.dtype | str = torch.float16,
        stochastic: bool = False,  # unbiased stochastic rounding instead of round to nearest
        seed: int = 0,  # stochastic rounding stream; each rank mixes in its own rank
        rank: int | None = None,  # default: this process's rank in the default group
    ) -> None:
        self.dtype = _parse_dtype(dtype)
        if not isinstance(stochastic, bool):
            raise TypeError(f"HalfPrecision: stochastic must be a bool, got {stochastic!r}")
        if not isinstance(seed, int):
            raise TypeError(f"HalfPrecision: seed must be an int, got {seed!r}")
        if rank is not None and (not isinstance(rank, int) or rank < 0):
            raise ValueError(f"HalfPrecision: rank must be a non-negative int, got {rank!r}")
        self.stochastic, self.seed, self.rank = stochastic, seed, rank
        # Rounding to nearest is biased (it is a deterministic function of g); the stochastic
        # cast is unbiased, which the statistical test checks.
        self.unbiased = stochastic
        self._draws: dict[str, int] = {}

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, HalfContext]:
        if not tensor.is_floating_point():
            raise TypeError(f"HalfPrecision: tensor must be floating point, got {tensor.dtype}")
        flat = tensor.reshape(-1)
        if self.stochastic:
            # A fresh stream per (rank, tensor, draw): reproducible and independent of
            # torch's global generator; ranks round independently, so errors average out.
            draw = self._draws.get(name, 0)
            self._draws[name] = draw + 1
            rank = default_rank() if self.rank is None else self.rank
            generator = derived_generator(flat.device, "fp16", self.seed, rank, name, draw)
            half = round_stochastic(flat, self.dtype, generator)
        else:
            half = flat.to(self.dtype)
        return (half.contiguous(),), HalfContext(tensor.shape, tensor.dtype)

    def decompress(self, payload: Payload, ctx: HalfContext) -> torch.Tensor:
        (half,) = payload
        return half.to(ctx.dtype).view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        return numel * torch.empty((), dtype=self.dtype).element_size()

    def state_dict(self) -> dict[str, dict[str, int]]:
        return {"draws": dict(self._draws)} if self.stochastic else {}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        if not self.stochastic:
            super().load_state_dict(state)
            return
        if set(state) != {"draws"}:
            raise ValueError(
                f"HalfPrecision.load_state_dict: expected key draws, got {list(state)}"
            )
        self._draws = dict(state["draws"])
