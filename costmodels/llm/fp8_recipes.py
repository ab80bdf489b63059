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

- ``fp8-cs`` (Transformer Engine ``Float8CurrentScaling``, "the simplest low precision recipe"
  of its docs, nvidia.github.io/TransformerEngine features/low_precision_training/
  fp8_current_scaling): one scale per tensor from that tensor's own amax (E4M3 forward, E5M2
  gradients, HYBRID by default), so every cast first reduces the amax (read 2) and then writes
  the fp8 tensor and its transpose (read 2, write 1 + 1): 6 bytes, the norm cannot cast for it;
  weights are cast once per step (Megatron caches them over the micro-batches). The GEMM is the
  per-tensor-scaled one of ``delayed``.
- ``mxfp8`` (Transformer Engine ``MXFP8BlockScaling``, features/low_precision_training/mxfp8:
  "one scaling factor per 32 consecutive values", E8M0 power-of-two scales, E4M3 in both
  passes, 1-D blocks, native on Blackwell, SM 10.0+): no amax over the tensor, so the norm
  writes the fp8 copies itself; a row-wise and a column-wise copy are needed (blocks run along
  one dimension), each with one scale byte per 32 elements: read 2, write 2 x (1 + 1/32) for an
  unfused cast. The block-scaled GEMM runs on Blackwell's MX tensor cores at the fp8 rate (an
  ESTIMATE: no dev data covers it). Blackwell only: costmodels/llm/step.py refuses it elsewhere.
- ``nvfp4`` (``--precision fp4``, not an ``--fp8-recipe``: NVIDIA, "Pretraining Large Language
  Models with NVFP4", arXiv:2509.25149; Transformer Engine ``NVFP4BlockScaling``): the linear
  layers' fprop, dgrad and wgrad GEMMs take E2M1 inputs at the GPU's dense FP4 rate, with an
  E4M3 scale per 16 elements and an FP32 scale per tensor (so every cast first needs the
  tensor's amax, read 2); weights use 16 x 16 blocks (one quantized copy serves both passes,
  cast once per step: read 2 + 2, write 0.5 + 1/32), activations and gradients 1 x 16 blocks
  along each dimension (two copies: read 2 + 2, write 2 x (0.5 + 1/16)); the 16 x 16 random
  Hadamard transform of the wgrad inputs and the stochastic rounding of gradients are fused into
  those casts. Attention, the output layer, the router, norms and element-wise kernels stay
  BF16. The paper also keeps about 16 % of the linear layers (the last blocks) in BF16; that is
  a model choice not priced here (all layers' linears run FP4, said with the prediction).

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

FP8_RECIPES: tuple[str, ...] = ("delayed", "tensorwise", "rowwise", "blockwise", "fp8-cs",
                                 "mxfp8")  # fmt: skip
BLACKWELL_ONLY: tuple[str, ...] = ("mxfp8",)  # MX block-scaled tensor cores (SM 10.0+)
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
    # issue 39 (module docstring): Transformer Engine's current scaling and MXFP8
    "fp8-cs": Fp8Recipe("fp8-cs", 6.0, 6.0, 6.0, 0.0, 6.0, False, 2, 1.0),
    "mxfp8": Fp8Recipe("mxfp8", 2.0 + 2 * (1 + 1 / 32), 2 / 32, 2.0 + 2 * (1 + 1 / 32), 0.0,
                       2.0 + 2 * (1 + 1 / 32), False, 0, 1.0),
}  # fmt: skip
# --precision fp4 (module docstring): the NVFP4 casts, FP4 GEMMs at the dense FP4 rate
NVFP4 = Fp8Recipe("nvfp4", 4.0 + 2 * (0.5 + 1 / 16), 4.0 + 2 * (0.5 + 1 / 16),
                  4.0 + 2 * (0.5 + 1 / 16), 0.0, 4.0 + 0.5 + 1 / 32, False, 2, 1.0)  # fmt: skip
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


def precision_note(precision: str, fp8_recipe: str | None) -> str:
    """One line saying what a low-precision step runs in and what it leaves out ("" for 16-bit;
    issue 39: an approximation is printed, never silent)."""
    if precision == "fp4":
        return ("NVFP4 (arXiv:2509.25149): linear-layer GEMMs in FP4 with 16-element E4M3 and "
                "per-tensor FP32 scales; attention, output layer, router and element-wise kernels "
                "BF16. APPROXIMATION: every layer's linears priced in FP4 (the paper keeps about "
                "16 % of them, the last blocks, in BF16); FP4 weight copies not in the memory")
    if precision == "fp8" and fp8_recipe == "mxfp8":
        return ("MXFP8 (Transformer Engine MXFP8BlockScaling): E4M3 with an E8M0 scale per 32 "
                "elements; block-scaled GEMMs at the fp8 rate (estimate, no dev data)")
    if precision == "fp8" and fp8_recipe == "fp8-cs":
        return ("FP8 current scaling (Transformer Engine Float8CurrentScaling): per-tensor scales "
                "from each tensor's own amax, an extra read per cast")
    return ""
