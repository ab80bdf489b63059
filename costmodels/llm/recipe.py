"""How a framework runs the step beyond its kernels: the knobs of FSDP2 / ZeRO, float8 and tensor
parallelism that ``predict_step`` reads (``recipe=``; the CLI flags of the same names).

Defaults are what each framework does out of the box, with where that was read:

- ``reduce_dtype``: the data-parallel gradient reduction's element type. torchtitan's FSDP2
  ``MixedPrecisionPolicy(reduce_dtype=float32)`` ("mixed_precision_reduce = float32",
  torchtitan config) and Megatron-LM's ``accumulate_allreduce_grads_in_fp32`` for bf16 reduce in
  fp32; fp16 Megatron and Megatron-LM before that rule in 16 bits (costmodels/llm/frameworks.py
  ``grad_reduce_bytes_bf16``). ``"bf16"`` halves the bytes.
- ``reshard_after_forward``: FSDP2 frees a block's gathered weights after its forward and
  gathers them again for the backward (True, torchtitan's default except for the last block,
  which "FSDP would prefetch immediately"); False keeps them (ZeRO-2-like memory, no backward
  all-gather).
- ``prefetch``: all-gathers in flight ahead of the block computing (FSDP2 issues the next
  block's all-gather while the current one runs: 1).
- ``overlap_param_gather``: Megatron's distributed optimizer (ZeRO-1) all-gathers the updated
  weights during the next step's forward (``--overlap-param-gather``, on in Megatron-Core/NeMo
  recipes) instead of after the optimizer; default on for ``megatron``, off for the others.
- ``fp8_recipe``: costmodels/llm/fp8_recipes.py (None: the framework's default).
- ``async_tp``: asynchronous tensor parallelism (costmodels/llm/async_tp.py; torchtitan
  ``--parallelism.enable_async_tensor_parallel``).
- ``fp8_param_gather``: weights gathered in fp8 under ZeRO-3/FSDP with FP8 training (torchao
  ``enable_fsdp_float8_all_gather``, TE/Megatron ``--fp8-param-gather``). None: on for Megatron
  (TE keeps fp8 weights), off for PyTorch (torchtitan's default ``false``).
- ``moe_dispatch_fp8``: the expert-parallel dispatch carries fp8 activations (DeepSeek-V3,
  arXiv:2412.19437, Sec. 3.3: "we quantize the activation before MoE up-projections into FP8 and
  then apply dispatch components"; the combine stays BF16). None: on with the blockwise recipe.
- ``moe_dispatcher`` (issue 39): ``alltoall``, ``deepep`` or ``hybridep``, how the expert
  exchange is priced (costmodels/llm/moe_dispatch.py); None: plain all-to-all, or DeepSeek's
  node-limited form for a model with node-limited routing.
- ``moe_imbalance`` (issue 39): the busiest expert-parallel rank's routed tokens over the mean,
  as the user measured it (max / mean expert load); None: the chance spread of a balanced router
  (costmodels/llm/moe_routing.py). Scales the expert GEMMs and the EP exchanges of that rank.
- ``cuda_graphs`` (issue 39; Megatron ``--enable-cuda-graph`` / TE ``make_graphed_callables``):
  each layer's kernels are replayed from a captured graph, so the host no longer issues them one
  by one (NVIDIA, "Getting Started with CUDA Graphs": graphs combine the driver work of the
  launches): the per-kernel host time (``host_s_per_kernel``) is dropped; the GPU-side gap
  between kernels (``kernel_launch_s``) is kept (no source gives its value inside a graph).
- ``fused_loss``: the cross-entropy runs as one in-place kernel on the 16-bit logits (flash-attn's
  xentropy ``CrossEntropyLoss(inplace_backward=True)``, llm-foundry's MPT default
  ``loss_fn='fused_crossentropy'``, read in mosaicml/llm-foundry ComposerMPTCausalLM with the
  search tool): the loss keeps the logits only (2 bytes per element, the gradient overwrites
  them) instead of an fp32 copy and gradient (costmodels/llm/activations.py). Default off.
- ``dropout``: the model trains with dropout (its masks are stored for the backward). None: as
  the shape's style (GPT shapes with, Llama shapes without); MPT's benchmark configs set every
  dropout to 0.
- ``deepspeed`` (issue 36): DeepSpeed ZeRO's bucket, prefetch and overlap knobs
  (costmodels/llm/deepspeed_config.py; None: DeepSpeed's defaults), read with
  ``--framework deepspeed``.
- ``fsdp_unit_size`` / ``fsdp_double_buffer`` (issue 39): Megatron-FSDP's
  ``--suggested-communication-unit-size`` (elements; None: its default) and
  ``--fsdp-double-buffer`` (costmodels/llm/framework_dp.py), read with ``--framework
  megatron-fsdp``.
- ``flash_attention`` (issue 39): the FlashAttention generation the attention core runs; None:
  the framework's (costmodels/llm/frameworks.py ``flash_version``: cuDNN / FA3-class kernels for
  Megatron-Core + Transformer Engine on Hopper). 2: Tri Dao's flash-attn 2, which Transformer
  Engine runs when cuDNN's fused attention is switched off (``NVTE_FUSED_ATTN=0``; "Transformer
  Engine prefers cuDNN flash attention on Hopper+ architectures [...] To disable cuDNN flash
  attention, set NVTE_FUSED_ATTN=0", NVIDIA/NeMo v2.1.0 docs/source/features/optimizations/
  attention_optimizations.rst), at FlashAttention-2's Hopper rate.
- ``attention_kernel`` (issue 36): the flash-attention implementation the model runs, priced at
  its published rate (costmodels/llm/attention_rates.py): ``flash1``, ``triton`` (the Triton
  port of FlashAttention-1, llm-foundry's MPT ``attn_impl: triton``), ``flash2``, ``flash3``.
  None: the framework's flash generation.
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.llm.attention_rates import ATTENTION_KERNELS
from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig
from costmodels.llm.fp8_recipes import FP8_RECIPES
from costmodels.llm.moe_dispatch import DISPATCHERS

REDUCE_DTYPES = ("fp32", "bf16")


@dataclass(frozen=True)
class TrainingRecipe:
    """The framework knobs of one step (module docstring); None = the framework's default."""

    reduce_dtype: str | None = None
    reshard_after_forward: bool = True
    prefetch: int = 1
    overlap_param_gather: bool | None = None
    fp8_recipe: str | None = None
    async_tp: bool = False
    fp8_param_gather: bool | None = None
    moe_dispatch_fp8: bool | None = None
    moe_dispatcher: str | None = None
    cuda_graphs: bool = False
    fused_loss: bool = False
    dropout: bool | None = None
    deepspeed: DeepSpeedZeroConfig | None = None
    fsdp_unit_size: int | None = None
    fsdp_double_buffer: bool = False
    moe_imbalance: float | None = None
    flash_attention: int | None = None
    attention_kernel: str | None = None

    def __post_init__(self) -> None:
        if self.flash_attention not in (None, 2, 3):
            raise ValueError("flash attention generation must be 2 or 3, got "
                             f"{self.flash_attention!r}")  # fmt: skip
        if self.attention_kernel is not None and self.attention_kernel not in ATTENTION_KERNELS:
            raise ValueError(f"attention kernel must be one of {', '.join(ATTENTION_KERNELS)}, "
                             f"got {self.attention_kernel!r}")  # fmt: skip
        if self.moe_imbalance is not None and not 1.0 <= self.moe_imbalance <= 64.0:
            raise ValueError("moe imbalance (busiest EP rank's routed tokens over the mean) must "
                             f"be between 1 and 64, got {self.moe_imbalance!r}")  # fmt: skip
        if self.moe_dispatcher is not None and self.moe_dispatcher not in DISPATCHERS:
            raise ValueError(f"MoE dispatcher must be one of {', '.join(DISPATCHERS)}, got "
                             f"{self.moe_dispatcher!r}")  # fmt: skip
        if self.reduce_dtype is not None and self.reduce_dtype not in REDUCE_DTYPES:
            raise ValueError(f"reduce dtype must be one of {', '.join(REDUCE_DTYPES)}, got "
                             f"{self.reduce_dtype!r}")  # fmt: skip
        if self.fp8_recipe is not None and self.fp8_recipe not in FP8_RECIPES:
            raise ValueError(f"fp8 recipe must be one of {', '.join(FP8_RECIPES)}, got "
                             f"{self.fp8_recipe!r}")  # fmt: skip
        if not 0 <= self.prefetch <= 8:
            raise ValueError(f"prefetch must be 0-8 blocks, got {self.prefetch}")

    def overlaps_param_gather(self, framework: str) -> bool:
        if self.overlap_param_gather is not None:
            return self.overlap_param_gather
        return framework == "megatron"

    def gathers_fp8(self, framework: str) -> bool:
        if self.fp8_param_gather is not None:
            return self.fp8_param_gather
        return framework.startswith("megatron")

    def dispatches_fp8(self, precision: str) -> bool:
        if self.moe_dispatch_fp8 is not None:
            return self.moe_dispatch_fp8 and precision == "fp8"
        return precision == "fp8" and self.fp8_recipe == "blockwise"


DEFAULT_RECIPE = TrainingRecipe()
