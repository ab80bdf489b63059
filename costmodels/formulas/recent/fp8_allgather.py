"""FP8 weight all-gather in fully sharded data parallelism (FSDP2 with float8 linears).

Source: torchtitan documentation, "Enable Float8 Training on H100s" (docs/float8.md, 2024):
``enable_fsdp_float8_all_gather`` casts each rank's shard of a Float8Linear weight to float8
before FSDP's all-gather "so we can communicate in float8 to save bandwidth", and
``precompute_float8_dynamic_scale_for_fsdp`` gathers the absolute maxima that set the scales in
a single all-reduce for all parameters (the PyTorch dev-discuss post on float8 all-gather in
FSDP2, linked from torchtitan's README, describes the design). FSDP's all-gather is a ring of
p-1 steps.

n is the bf16 size of the weights being gathered. A float8 value (e4m3) takes one byte, half a
bf16 one, so the all-gather moves n/2 instead of n::

    fp8:  (p-1) alpha + (p-1)/p n/2 beta          bf16: (p-1) alpha + (p-1)/p n beta

From fp32 weights the saving would be four-fold. The scale all-reduce carries one float per
weight tensor and is left out (it is independent of n).
"""

from __future__ import annotations

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p


def _ring_allgather(size: object) -> object:
    return (p - 1) * (alpha + size / p * beta)


MODEL = CostModel(
    id="fp8-allgather",
    title="FP8 weight all-gather in FSDP2 (versus bf16)",
    variants={
        "fp8": Variant(
            time=_ring_allgather(n / 2),
            bytes_sent={"rank": (p - 1) / p * n / 2},
            description="shards cast to float8 (1 byte per value) before the ring all-gather",
        ),
        "bf16": Variant(
            time=_ring_allgather(n),
            bytes_sent={"rank": (p - 1) / p * n},
            description="the usual bf16 all-gather, for comparison",
        ),
    },
    source=(
        "torchtitan, docs/float8.md (FSDP float8 all-gather, 2024), github.com/pytorch/torchtitan; "
        "ring all-gather of R. Thakur et al., IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "n = bf16 bytes of the weights one all-gather assembles; float8 e4m3 or e5m2 values "
        "take one byte",
        "tensor-wise scaling: one scale per weight tensor, reduced in one small all-reduce per "
        "step that is not counted",
        "ring all-gather, one full-duplex link per rank; FSDP2 repeats it in the backward pass "
        "when parameters are resharded after the forward",
    ),
)

MODELS = [MODEL]
