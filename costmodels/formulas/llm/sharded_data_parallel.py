"""ZeRO and FSDP: gradient and parameter traffic of sharded data parallelism per step.

With n bytes of gradients (and as many of parameters) on each of p data-parallel ranks,
ZeRO stages 1 and 2 move what a ring all-reduce moves (reduce-scatter the gradients, all-gather
the updated parameters): 2 (p-1)/p n per rank. Stage 3 (and FSDP's full sharding) also gathers
the parameters again for the backward pass: 3 (p-1)/p n, "1.5x" the baseline (Rajbhandari et
al., SC'20, Section 7).
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import ring_allgather, ring_reduce_scatter
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

# Reduce-scatter the gradients, then all-gather parameters once (stages 1-2) or twice (stage 3).
TWO_PHASES = ring_reduce_scatter(p, n, alpha, beta, gamma) + ring_allgather(p, n, alpha, beta)
THREE_PHASES = TWO_PHASES + ring_allgather(p, n, alpha, beta)


ZERO = CostModel(
    id="zero",
    title="ZeRO data parallelism: traffic per step by stage",
    variants={
        "stage-1-2": Variant(
            time=TWO_PHASES,
            bytes_sent={"rank": 2 * (p - 1) / p * n},
            description="reduce-scatter gradients + all-gather parameters",
        ),
        "stage-3": Variant(
            time=THREE_PHASES,
            bytes_sent={"rank": 3 * (p - 1) / p * n},
            description="parameters gathered for forward and again for backward",
        ),
    },
    source=(
        "S. Rajbhandari et al., 'ZeRO: memory optimizations toward training trillion parameter "
        "models', SC'20, arXiv:1910.02054, Section 7 (2 Psi baseline, 3 Psi for stage 3)."
    ),
    assumptions=(
        "ring collectives over the data-parallel group on one link (alpha, beta)",
        "no overlap with compute (an upper bound on what is exposed)",
    ),
)

FSDP = CostModel(
    id="fsdp",
    title="PyTorch FSDP: traffic per step",
    variants={
        "full-shard": Variant(
            time=THREE_PHASES,
            bytes_sent={"rank": 3 * (p - 1) / p * n},
            description="all-gather forward, all-gather backward, reduce-scatter gradients",
        ),
        "shard-grad-op": Variant(
            time=TWO_PHASES,
            bytes_sent={"rank": 2 * (p - 1) / p * n},
            description="parameters kept after forward: one all-gather, one reduce-scatter",
        ),
    },
    source=(
        "Y. Zhao et al., 'PyTorch FSDP: experiences on scaling fully sharded data parallel', "
        "PVLDB 16(12), 2023, arXiv:2304.11277."
    ),
    assumptions=("one FSDP unit covering n bytes; ring collectives; no prefetch overlap",),
)

MODELS = [ZERO, FSDP]
