"""Random-k sparsification: send k coordinates chosen uniformly at random.

Papers: S. U. Stich, J.-B. Cordonnier and M. Jaggi, "Sparsified SGD with memory", NeurIPS 2018:
uniform random-k (rand-k), what this file implements, analysed with error feedback. J. Wangni,
J. Wang, J. Liu and T. Zhang, "Gradient sparsification for communication-efficient distributed
optimization", NeurIPS 2018: keep each coordinate with its own probability and rescale it so the
sparse vector is unbiased (the variance-aware variant; uniform random-k is its equal-probability
case, and ``unbiased=True`` below is that rescaling).

Algorithm, per call for tensor ``name``:

1. derive a private generator from (seed, name, call counter) and, with ``shared_seed=False``,
   this rank; ranks that share the seed draw the *same* indices without talking;
2. k = max(1, ceil(ratio * numel)) (or a fixed k, capped at numel); draw k distinct indices;
3. values = g[indices], times numel / k with ``unbiased=True`` (each coordinate is kept with
   probability k / numel, so the rescaled vector equals g in expectation, with variance
   E||C(g) - g||^2 = (numel / k - 1) ||g||^2).

Communication cost (cost model ``random-k``):

- ``shared_seed=True`` (variant ``shared-seed``): every rank knows the indices, so only the k
  values travel and they add in place: a ring all-reduce, 2(p-1)/p k w_v bytes per rank when p
  divides k;
- ``shared_seed=False`` (variant ``independent``): supports differ, so the k (value, index) pairs
  are all-gathered, (p-1) k (w_v + w_i) bytes per rank.

Ranks must call ``compress`` for a name equally often (every rank does, once per step) so their
counters agree; the counters are the state to checkpoint. With a shared seed, all ranks must also
keep the tensor on the same device type: CPU and CUDA generators draw different streams.

Example::

    allreduce_compressed(grad, get("random-k", ratio=0.01, unbiased=True), name="fc.weight")
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.compression.base import Compressor, Payload
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.topk import TopK
from reference_impls.registry import reference_impl


def derived_generator(device: torch.device, *parts: object) -> torch.Generator:
    """A private generator on ``device`` seeded from ``parts`` (ints and strings).

    Python's ``hash`` of a string differs between processes, so the seed is a BLAKE2 digest of
    the parts' text: every process derives the same stream from the same parts.
    """
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    generator = torch.Generator(device=device)
    generator.manual_seed(int.from_bytes(digest, "little") & (2**63 - 1))
    return generator


def default_rank() -> int:
    """This process's rank in the default group, or 0 when torch.distributed is not set up."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


@dataclass(frozen=True)
class RandomKContext:
    shape: torch.Size
    dtype: torch.dtype
    indices: torch.Tensor | None  # shared seed: the indices stay here instead of on the wire


@register_compressor("random-k")
@reference_impl
class RandomK(Compressor):
    """Keep k uniformly random coordinates, optionally rescaled by numel / k (unbiased)."""

    def __init__(
        self,
        ratio: float | None = None,
        k: int | None = None,
        shared_seed: bool = True,  # same indices on every rank: all-reduce values only
        unbiased: bool = False,  # rescale the kept values by numel / k
        seed: int = 0,
        rank: int | None = None,  # independent streams: default is this process's rank
        index_dtype: torch.dtype = torch.int32,
    ) -> None:
        if (ratio is None) == (k is None):
            raise ValueError("RandomK: give exactly one of ratio (0 < ratio <= 1) or k (k >= 1)")
        if ratio is not None and not 0 < ratio <= 1:
            raise ValueError(f"RandomK: ratio must be in (0, 1], got {ratio}")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise ValueError(f"RandomK: k must be a positive int, got {k!r}")
        for flag, value in (("shared_seed", shared_seed), ("unbiased", unbiased)):
            if not isinstance(value, bool):
                raise TypeError(f"RandomK: {flag} must be a bool, got {value!r}")
        if not isinstance(seed, int):
            raise TypeError(f"RandomK: seed must be an int, got {seed!r}")
        if rank is not None and (not isinstance(rank, int) or rank < 0):
            raise ValueError(f"RandomK: rank must be a non-negative int, got {rank!r}")
        if index_dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"RandomK: index_dtype must be torch.int32 or torch.int64, got {index_dtype}"
            )
        self.ratio, self.k, self.seed, self.rank = ratio, k, seed, rank
        self.shared_seed, self.unbiased, self.index_dtype = shared_seed, unbiased, index_dtype
        self.communication = "allreduce" if shared_seed else "allgather"
        self.variant = "shared-seed" if shared_seed else "independent"  # of the cost model
        self._draws: dict[str, int] = {}

    # Step 2 is top-k's rule for k (same ``ratio`` / ``k`` attributes), so it is top-k's code.
    k_for = TopK.k_for

    def _generator(self, device: torch.device, name: str) -> torch.Generator:
        draw = self._draws.get(name, 0)
        self._draws[name] = draw + 1
        if self.shared_seed:
            return derived_generator(device, "random-k", self.seed, name, draw)
        rank = default_rank() if self.rank is None else self.rank
        return derived_generator(device, "random-k", self.seed, name, draw, rank)

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, RandomKContext]:
        flat = tensor.reshape(-1)
        numel = flat.numel()
        if self.index_dtype == torch.int32 and numel >= 2**31:
            raise ValueError("RandomK: tensors of 2**31 or more elements need index_dtype=int64")
        k = self.k_for(numel)
        generator = self._generator(flat.device, name)
        # Sorted indices read memory in order; the choice is still a uniform k-subset.
        indices = torch.randperm(numel, generator=generator, device=flat.device)[:k].sort().values
        values = flat[indices]
        if self.unbiased and k:
            values = values * (numel / k)
        if self.shared_seed:
            return (values.contiguous(),), RandomKContext(tensor.shape, tensor.dtype, indices)
        payload = (values.contiguous(), indices.to(self.index_dtype))
        return payload, RandomKContext(tensor.shape, tensor.dtype, None)

    def decompress(self, payload: Payload, ctx: RandomKContext) -> torch.Tensor:
        values = payload[0]
        indices = ctx.indices if ctx.indices is not None else payload[1]
        dense = torch.zeros(ctx.shape.numel(), dtype=ctx.dtype, device=values.device)
        dense.index_add_(0, indices.long(), values.to(ctx.dtype))
        return dense.view(ctx.shape)

    def wire_bytes(self, numel: int, dtype: torch.dtype) -> int:
        k = self.k_for(numel)
        value_bytes = torch.empty((), dtype=dtype).element_size()
        if self.shared_seed:
            return k * value_bytes
        return k * (value_bytes + torch.empty((), dtype=self.index_dtype).element_size())

    def state_dict(self) -> dict[str, dict[str, int]]:
        return {"draws": dict(self._draws)}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        if set(state) != {"draws"}:
            raise ValueError(f"RandomK.load_state_dict: expected key draws, got {list(state)}")
        if not all(isinstance(v, int) and v >= 0 for v in state["draws"].values()):
            raise ValueError("RandomK.load_state_dict: draws must map names to counts >= 0")
        self._draws = dict(state["draws"])
