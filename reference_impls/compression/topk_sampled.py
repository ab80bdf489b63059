"""Top-k at GPU speed: a threshold estimated from a random sample replaces the full selection.

``torch.topk`` on a large gradient is a multi-pass radix selection (on one H200, 1.48 ms for 1%
of 64M float32, /work/shared/data/h200_profile.json, against 0.06 ms to read the tensor once).
DGC's idea (Y. Lin, S. Han, H. Mao, Y. Wang and W. J. Dally, "Deep gradient compression", ICLR
2018, section 3.1 "sampling") is to estimate the k-th largest magnitude from a small random
sample and keep what passes it: one pass over the gradient plus work on the sample. Two
compressors share these steps (k = ceil(ratio * numel), s = ceil(sample_ratio * numel) samples):

1. draw s positions uniformly (private generator), the sample = |g| there;
2. threshold = the j-th largest sampled magnitude, j chosen below;
3. candidates = indices where |g| >= threshold (one fused compare, then ``torch.nonzero``).

:class:`SampledTopK` (approximate, DGC's estimate): j = ceil(k s / numel), so about k entries
pass. More than k: keep k of them, a window of k in the candidate list starting at a random
offset (each candidate kept with probability k / count, no positional bias; DGC keeps the exact
top-k of the candidates instead, a second selection this variant skips for speed). Fewer: send
them all, padded with (0, index 0) pairs to k, so every payload is k pairs (as dgc.py).

:class:`PrefilteredTopK` (exact): j = ceil(k s / numel + 4 sqrt(k s / numel)) + 1, four
standard deviations of the binomial sample count above the estimate, so with high probability
at least k entries pass; then the exact top-k among the candidates, which is the exact top-k of
the tensor (every entry above the k-th largest passes the threshold). If fewer than k pass, it
falls back to ``topk`` of the whole tensor (``fallbacks`` counts how often).

Tensors of at most ``exact_below`` elements (and k = numel) use plain exact top-k: sampling
does not pay there. Payload, decompression, wire bytes and exchange are
:class:`~reference_impls.compression.topk.TopK`'s: k values and k int32 indices, all-gathered.

Communication cost: (p-1) k (w_v + w_i) bytes per rank (cost model ``topk-sparsification``,
variant ``ring-allgather``).

Example::

    sampled = ErrorFeedback(get("topk-sparsification/sampled", ratio=0.01))
    allreduce_compressed(grad, sampled, name="fc.weight")
"""

from __future__ import annotations

import math

import torch

from reference_impls.compression.base import Payload
from reference_impls.compression.bits import PrivateGenerators
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.fused import Fusable, check_fused
from reference_impls.compression.topk import TopK, TopKContext
from reference_impls.registry import reference_impl

MARGIN_SIGMAS = 4.0  # PrefilteredTopK: how far below the estimate the threshold is put


def kth_largest(values: torch.Tensor, j: int) -> torch.Tensor:
    """The j-th largest of a 1-D tensor (0-d). A sort: on a GPU far faster than ``topk`` or
    ``kthvalue`` for a sample of 10**4-10**6 values (kthvalue runs one block per row)."""
    return torch.sort(values).values[values.numel() - j]


def at_least(flat: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
    """|flat| >= threshold as a bool tensor (NaN never passes)."""
    return flat.abs() >= threshold


_AT_LEAST = Fusable(at_least)


class _SampledSelection(TopK):
    """Steps 1-3 of the module doc; subclasses choose j and what to do with the candidates."""

    def __init__(
        self,
        ratio: float | None = None,  # k = ceil(ratio * numel); default 0.01 when k is not given
        k: int | None = None,
        sample_ratio: float = 0.01,  # s / numel (DGC samples 0.1% to 1%)
        exact_below: int = 1 << 15,  # tensors up to this many elements: exact top-k
        seed: int | None = None,  # None: derived from the rank (bits.PrivateGenerators)
        index_dtype: torch.dtype = torch.int32,
        fused: bool | None = None,  # the compare as a compiled kernel (fused.py)
    ) -> None:
        who = type(self).__name__
        super().__init__(ratio=0.01 if ratio is None and k is None else ratio, k=k,
                         index_dtype=index_dtype)  # fmt: skip
        if (
            isinstance(sample_ratio, bool)
            or not isinstance(sample_ratio, int | float)
            or not (0 < sample_ratio <= 1)
        ):
            raise ValueError(f"{who}: sample_ratio must be in (0, 1], got {sample_ratio!r}")
        if isinstance(exact_below, bool) or not isinstance(exact_below, int) or exact_below < 0:
            raise ValueError(f"{who}: exact_below must be an int >= 0, got {exact_below!r}")
        self.sample_ratio, self.exact_below = float(sample_ratio), exact_below
        self.fused = check_fused(fused, who)
        self.coins = PrivateGenerators(seed)

    def sample_rank(self, k: int, samples: int, numel: int) -> int:
        """j: which sampled magnitude (1 = the largest) becomes the threshold."""
        raise NotImplementedError

    def choose(self, flat: torch.Tensor, found: torch.Tensor, k: int) -> torch.Tensor:
        """Indices to send (at most k) given the candidate indices ``found``."""
        raise NotImplementedError

    def compress(self, tensor: torch.Tensor, name: str = "") -> tuple[Payload, TopKContext]:
        flat = tensor.reshape(-1)
        numel = flat.numel()
        k = self.k_for(numel)
        if numel <= self.exact_below or k == numel:
            return super().compress(tensor, name)  # plain top-k: sampling does not pay
        if self.index_dtype == torch.int32 and numel >= 2**31:
            raise ValueError(f"{type(self).__name__}: tensors of 2**31 or more elements need "
                             "index_dtype=torch.int64")  # fmt: skip
        samples = min(numel, math.ceil(self.sample_ratio * numel))
        generator = self.coins.generator(flat.device)
        positions = torch.randint(numel, (samples,), generator=generator, device=flat.device)
        threshold = kth_largest(flat[positions].abs(), self.sample_rank(k, samples, numel))
        mask = _AT_LEAST(flat, threshold, fused=self.fused, device=flat.device, numel=numel)
        chosen = self.choose(flat, torch.nonzero(mask).view(-1), k)
        values = flat.new_zeros(k)
        indices = torch.zeros(k, dtype=self.index_dtype, device=flat.device)
        values[: chosen.numel()] = flat[chosen]
        indices[: chosen.numel()] = chosen.to(self.index_dtype)
        return (values, indices), TopKContext(tensor.shape, tensor.dtype)


@register_compressor("topk-sparsification/sampled")
@reference_impl(record="topk-sparsification", variant="ring-allgather")
class SampledTopK(_SampledSelection):
    """About the k largest magnitudes, by DGC's sampled threshold (see the module doc)."""

    def sample_rank(self, k: int, samples: int, numel: int) -> int:
        return min(samples, max(1, math.ceil(k * samples / numel)))

    def choose(self, flat: torch.Tensor, found: torch.Tensor, k: int) -> torch.Tensor:
        count = found.numel()
        if count <= k:
            return found
        # The offset comes from a CPU generator: no device sync, the count is known already.
        offset = int(torch.randint(count, (1,), generator=self.coins.generator(_CPU)).item())
        return found.roll(-offset)[:k]


@register_compressor("topk-sparsification/prefiltered")
@reference_impl(record="topk-sparsification", variant="ring-allgather")
class PrefilteredTopK(_SampledSelection):
    """The exact k largest magnitudes, selected among the entries above a sampled threshold."""

    fallbacks = 0  # calls where fewer than k passed the threshold (counted per instance)

    def sample_rank(self, k: int, samples: int, numel: int) -> int:
        expected = k * samples / numel
        return min(samples, math.ceil(expected + MARGIN_SIGMAS * math.sqrt(expected)) + 1)

    def choose(self, flat: torch.Tensor, found: torch.Tensor, k: int) -> torch.Tensor:
        if found.numel() < k:
            self.fallbacks += 1
            return flat.abs().topk(k, sorted=False).indices
        return found[flat[found].abs().topk(k, sorted=False).indices]


_CPU = torch.device("cpu")
