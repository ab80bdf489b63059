"""FP8 training recipes (``--fp8-recipe``): how the scales are found, what the casts cost and how
fast the scaled GEMMs run.

Every recipe runs the four linear layers' GEMMs with fp8 inputs at the GPU's fp8 tensor peak
(E4M3 forward, E5M2 or E4M3 gradients); they differ in the granularity of the scales:

- ``delayed`` (Transformer Engine's default ``DelayedScaling``; Micikevicius et al., "FP8 Formats
  for Deep Learning", arXiv:2209.05433): one scale per tensor from the amax history of earlier
  iterations, so a cast is one pass fused with the norm before it where there is one
  (``LayerNormLinear``) and a cast-transpose kernel otherwise (read 2 bytes, write the tensor
  and its transpose, 1 + 1), plus a small amax/scale update per GEMM. Megatron's default.
- ``tensorwise`` (torchao ``Float8LinearRecipeName.TENSORWISE``, torchtitan's default float8):
  dynamic per-tensor scales, so every cast first reduces the amax (one more read of the 2-byte
  tensor) and then casts (read 2, write 1); the backward casts the output gradient and the
  transposes of the saved input and weight again. torch.compile fuses the amax into the op
  that produced the tensor (one read saved).
- ``rowwise`` (torchao ``ROWWISE``): one scale per row of each operand, which needs the amax
  along both dimensions (the transposed use in the backward has its own scales): about twice
  the cast traffic of tensorwise, and the row-scaled GEMM (cuBLAS / CUTLASS with per-row scale
  epilogues) runs below the tensorwise rate. torchtitan's June 2025 benchmark (the dev file
  torchtitan-asynctp-h100-dev.csv) measured rowwise at about bf16 speed ("the low baseline
  performance of the vanilla TP float8 rowwise training is being addressed",
  pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md); its GEMM rate is
  therefore a constant fitted on that file (``rowwise_gemm_efficiency``,
  costmodels/data/llm-pytorch-constants.json).
- ``blockwise`` (DeepSeek-V3: 1 x 128 activation tiles and 128 x 128 weight blocks, DeepSeek-AI,
  arXiv:2412.19437, Sec. 3.3; Transformer Engine ``Float8BlockScaling``): casts fused like
  ``delayed``'s, the block-scaled GEMM at ``BLOCKWISE_GEMM_EFFICIENCY`` of the tensorwise rate
  (an ESTIMATE: DeepGEMM reports "up to 1550 TFLOPS" on H800, deepseek-ai/DeepGEMM README, i.e.
  0.78 of the 1,979 dense peak, against MAMF-class ~0.8-0.85 of peak for plain fp8 GEMMs;
  no dev data covers it, so predictions with it are flagged as unvalidated).

Bytes below are per element of the tensor cast (HBM reads + writes), hand counts of the
kernels described; launches per linear layer and pass. The cast kernels run at
``fp8_cast_efficiency`` of the other memory-bound kernels' HBM rate (amax reductions along
either dimension and transposed writes run below a streaming copy; fitted on the torchtitan
dev rows, costmodels/data/llm-pytorch-constants.json: the 8B's casts are a larger share of its
step than the 70B's, which is what tells this apart from the GEMM rates). Under FSDP with the
float8 all-gather the weights are cast on their shard (costmodels/llm/layer_ops.py).
"""

from __future__ import annotations

from dataclasses import dataclass

FP8_RECIPES: tuple[str, ...] = ("delayed", "tensorwise", "rowwise", "blockwise")
BLOCKWISE_GEMM_EFFICIENCY = 0.92  # ESTIMATE (module docstring); not fitted, not validated


@dataclass(frozen=True)
class Fp8Recipe:
    """Cast traffic and GEMM rate of one recipe (module docstring)."""

    name: str
    input_cast_bytes: float  # forward: per element of a linear's input not cast by a fused norm
    fused_input_cast_bytes: float  # forward: per element of an input the norm kernel casts
    grad_cast_bytes: float  # backward: per element of each output gradient (cast + transpose)
    saved_input_recast_bytes: float  # backward: transposed re-cast of the saved input
    weight_cast_bytes: float  # per local weight element, every forward (dynamic) or per step
    weight_cast_per_microbatch: bool  # dynamic scaling re-casts weights every forward
    extra_launches: int  # amax / scale kernels per linear and pass
    gemm_efficiency: float  # x the fp8 tensor rate; rowwise: taken from the fitted constants


RECIPES: dict[str, Fp8Recipe] = {
    "delayed": Fp8Recipe("delayed", 4.0, 0.0, 4.0, 0.0, 4.0, False, 1, 1.0),
    "tensorwise": Fp8Recipe("tensorwise", 5.0, 3.0, 6.0, 3.0, 6.0, True, 2, 1.0),
    "rowwise": Fp8Recipe("rowwise", 8.0, 6.0, 10.0, 5.0, 10.0, True, 4, 1.0),
    "blockwise": Fp8Recipe("blockwise", 4.0, 0.0, 4.0, 0.0, 4.0, False, 1,
                           BLOCKWISE_GEMM_EFFICIENCY),
}  # fmt: skip
COMPILED_SAVING = 2.0  # bytes per element torch.compile saves on a dynamic cast (fused amax)


def default_recipe(framework: str) -> str:
    """The recipe a framework runs with ``--precision fp8`` and no ``--fp8-recipe``."""
    return "tensorwise" if framework.startswith("pytorch") else "delayed"


def get_recipe(name: str | None, framework: str) -> Fp8Recipe:
    """The recipe ``name`` (None: the framework's default); ValueError naming the choices."""
    chosen = default_recipe(framework) if name is None else name
    if chosen not in RECIPES:
        raise ValueError(f"fp8 recipe must be one of {', '.join(FP8_RECIPES)}, got {chosen!r}")
    return RECIPES[chosen]


def cast_bytes(recipe: Fp8Recipe, which: str, compiled: bool) -> float:
    """Bytes per element of one cast (``which`` a field name of Fp8Recipe); torch.compile fuses
    the amax reduction of a dynamic recipe into the producer (COMPILED_SAVING)."""
    value = float(getattr(recipe, which))
    if compiled and recipe.weight_cast_per_microbatch and value > COMPILED_SAVING:
        value -= COMPILED_SAVING
    return value
