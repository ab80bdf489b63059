"""Tensor (Megatron) and sequence parallelism: activation traffic per layer and micro-batch.

Megatron's tensor parallelism (Shoeybi et al. 2019) splits the attention and MLP blocks so that
each block ends in an all-reduce of the b x s x h activation among the p TP ranks: two in the
forward pass, two in the backward pass, so a rank sends 8 (p-1)/p n bytes per layer and
micro-batch (Narayanan et al. SC'21 count 8 b s h (p-1)/p for 1-byte units of b s h). Full
recomputation repeats the forward ones: 6 all-reduces.
Sequence parallelism (Korthikanti et al. 2022) replaces each all-reduce by a reduce-scatter and
an all-gather of the same total volume. n below is the activation size b*s*h*w in bytes.
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import ring_allgather, ring_reduce_scatter
from costmodels.formulas.ring_allreduce import ring_allreduce_bytes, ring_allreduce_time
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

TP = CostModel(
    id="megatron-tp",
    title="Megatron tensor parallelism: activation all-reduces per layer",
    variants={
        "per-layer": Variant(
            time=4 * ring_allreduce_time(n),
            bytes_sent={"rank": 4 * ring_allreduce_bytes(n)},
            description="2 all-reduces forward + 2 backward of n = b*s*h*w bytes, ring",
        ),
        "per-layer-full-recompute": Variant(
            time=6 * ring_allreduce_time(n),
            bytes_sent={"rank": 6 * ring_allreduce_bytes(n)},
            description="the forward all-reduces run again when activations are recomputed",
        ),
    },
    source=(
        "M. Shoeybi et al., 'Megatron-LM: training multi-billion parameter language models "
        "using model parallelism', arXiv:1909.08053, 2019; volumes as in D. Narayanan et al., "
        "'Efficient large-scale language model training on GPU clusters using Megatron-LM', "
        "SC'21, arXiv:2104.04473."
    ),
    assumptions=(
        "the TP group sits inside one node; ring all-reduce on its link (alpha, beta)",
        "communication is not overlapped with the matrix multiplications",
        "n = micro-batch x sequence x hidden x bytes per value",
    ),
)

SEQUENCE_PARALLEL = CostModel(
    id="seq-parallel",
    title="Sequence parallelism: reduce-scatter + all-gather instead of all-reduce",
    variants={
        "per-layer": Variant(
            time=4 * ring_reduce_scatter(p, n, alpha, beta, gamma)
            + 4 * ring_allgather(p, n, alpha, beta),
            bytes_sent={"rank": 8 * (p - 1) / p * n},
            description="4 reduce-scatters + 4 all-gathers of n bytes per layer (ring)",
        )
    },
    source=(
        "V. Korthikanti et al., 'Reducing activation recomputation in large transformer "
        "models', arXiv:2205.05198, 2022 (same bandwidth as tensor parallelism alone)."
    ),
    assumptions=(
        "ring reduce-scatter and all-gather inside the TP group",
        "without recomputation; the layer norms and dropouts then work on n/p bytes each",
    ),
)

MODELS = [TP, SEQUENCE_PARALLEL]
