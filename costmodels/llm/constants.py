"""The handful of constants of the operator model, where each comes from, and how it is loaded.

Fitted (``FITTED``): chosen by ``costmodels.llm.fit_constants.fit`` (least squares on the log
of predicted / measured step time) on the even rows of the vTrain single-node dev data
(costmodels/data/vtrain-single-node-dev.csv; re-run ``benchmarks/llm_step_fit.py``). The
values live in costmodels/data/llm-step-constants.json with the fit's provenance, so a re-fit
changes data, not code. Everything else is sourced and fixed:

- ``flash_fwd_fraction`` / ``flash_bwd_fraction``: FlashAttention-2 reaches "50-73 % of the
  theoretical maximum FLOPs/s on A100" (Dao 2023, arXiv:2307.08691, abstract); we take 0.70
  forward and 0.50 backward (its backward is the slower pass). FlashAttention-3 reaches 75 %
  forward on H100 (Shah et al. 2024, arXiv:2407.08608, abstract: 740 TFLOP/s in FP16); used
  for Hopper and newer with the same backward share. Estimates within the published ranges.
- ``fp8_cast_overhead``: see costmodels/llm/layer_ops.py (Transformer Engine delayed scaling).

Fitted on the PyTorch-native dev data (``FITTED_PYTORCH``; costmodels/data/
llm-pytorch-constants.json, written by ``benchmarks/llm_step_fit.py --family pytorch``): the
torchtitan async-TP H100 rows (costmodels/data/torchtitan-asynctp-h100-dev.csv) and the
nanotron TP-scaling rows (costmodels/data/nanotron-tp-scaling-3b-dev.csv), with a held-out split
(costmodels/llm/dev_runs.py says which rows). They touch only what the A100 Megatron data cannot
see (float8 rowwise GEMMs, the float8 cast kernels' share of the HBM rate, communication that
overlaps compute, eager PyTorch's host cost per kernel), so the five constants above keep their
values and their fit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "llm-step-constants.json"

FITTED: tuple[str, ...] = (
    "gemm_sustained",
    "hbm_efficiency",
    "kernel_launch_s",
    "host_s_per_kernel",
    "microbatch_overhead_s",
)
PYTORCH_DATA = DATA.with_name("llm-pytorch-constants.json")
CEILINGS_DATA = DATA.with_name("llm-mfu-ceilings.json")
# megatron_hopper_tensor_rate fitted on the DGX Cloud Megatron-Core H100 rows (fit half), with every
# other constant at its shipped value: costmodels/validation/megatron_hopper_fit.py
MEGATRON_HOPPER_DATA = DATA.with_name("llm-megatron-hopper-constants.json")
# per GPU generation, precision class and framework family (costmodels/llm/mfu_ceiling.py)
MFU_CEILINGS: tuple[str, ...] = tuple(
    f"mfu_ceiling_{gen}{fp8}_{family}" for family in ("megatron", "pytorch")
    for gen, fp8 in (("ampere", ""), ("hopper", ""), ("hopper", "_fp8")))  # fmt: skip
FITTED_PYTORCH: tuple[str, ...] = (
    "hopper_tensor_rate",
    "rowwise_gemm_efficiency",
    "fp8_cast_efficiency",
    "overlap_interference",
)
FITTED_MEMORY: tuple[str, ...] = ("allocator_fragmentation",)
# fitted only where runs that inform them are in the fit (costmodels/validation/loso.py
# ``informed_names``): Megatron on Hopper, Transformer Engine fp8
FITTED_WHERE_PRESENT: tuple[str, ...] = ("megatron_hopper_tensor_rate", "te_fp8_cast_efficiency")
# float8 recipes whose casts are torchao's (PyTorch float8); the others are Transformer Engine's
TORCHAO_RECIPES: tuple[str, ...] = ("tensorwise", "rowwise")


@dataclass(frozen=True)
class StepConstants:
    """SI units. Defaults are starting values; ``default_constants()`` returns the fitted ones."""

    # K at which a GEMM's tile loop would reach half its rate. 0 = no K ramp: fitted freely, the
    # dev data drove it to its lower bound, so the ramp is off (tile and wave quantisation stay)
    gemm_k_half: float = 0.0
    gemm_sustained: float = 1.0  # share of the measured matmul ceiling sustained in training
    hbm_efficiency: float = 0.85  # achievable share of HBM bandwidth for memory-bound kernels
    # fixed GPU cost per kernel launch: launch latency, ramp-up and the tail of its last wave
    kernel_launch_s: float = 5e-6
    host_s_per_kernel: float = 20e-6  # host (Python + dispatch) time per kernel, eager
    # torch.compile issues its kernels from generated code: an ESTIMATE, 1/4 of eager (no
    # dev data was measured with compile, so it is not fitted)
    compiled_host_share: float = 0.25
    microbatch_overhead_s: float = 1e-3  # host-side work per micro-batch and pipeline stage
    # per optimizer step (loss-scale check, logging, sync): fitted freely, the dev data drove it
    # to zero (the optimizer kernels already cover the per-step work), so it stays 0
    step_overhead_s: float = 0.0
    flash_fwd_fraction_ampere: float = 0.70
    flash_bwd_fraction_ampere: float = 0.50
    flash_fwd_fraction_hopper: float = 0.75
    flash_bwd_fraction_hopper: float = 0.55
    # FlashAttention-2 on Hopper (PyTorch SDPA): "only 35% utilization on the H100" (FA3 paper,
    # arXiv:2407.08608, abstract); backward at the Ampere backward/forward ratio (estimate)
    flash_fwd_fraction_hopper_fa2: float = 0.35
    flash_bwd_fraction_hopper_fa2: float = 0.25
    # share of the modelled GEMM / attention rate PyTorch-native stacks sustain on Hopper
    # (shipped: fitted on torchtitan and nanotron, llm-pytorch-constants.json; the LOSO refits
    # add llm-foundry's H100 rows; the A100 constants above cover Ampere). It is the PyTorch
    # stacks' own shortfall, not the GPU's:
    # applied to Megatron-Core on Hopper as well, it left the DGX Cloud runs 10 % too slow held
    # out before any MFU ceiling (8B bf16 at 54 % MFU where 62 % was measured); Megatron on
    # Hopper runs at megatron_hopper_tensor_rate instead (tensor_rate)
    hopper_tensor_rate: float = 1.0
    # the same share for Megatron kernels on Hopper (class default 1: the measured matmul rate x
    # gemm_sustained, as on Ampere); shipped fitted on the DGX Cloud fit half
    # (llm-megatron-hopper-constants.json); the LOSO refits (costmodels/validation/loso.py) fit
    # it only where they hold Megatron-on-Hopper runs
    megatron_hopper_tensor_rate: float = 1.0
    # float8 cast / amax / transpose kernels (fp8_recipes.py) at this share of the rate of the
    # other memory-bound kernels: reductions along either dimension and transposed writes run
    # below a streaming copy; fitted on the torchtitan rows, where the 8B's casts are a larger
    # share of the step than the 70B's (costmodels/data/llm-pytorch-constants.json)
    fp8_cast_efficiency: float = 1.0
    # the same share for Transformer Engine's casts (delayed and current scaling, MXFP8: NeMo /
    # Megatron-Core, llm-foundry's amp_fp8), 0 = as fp8_cast_efficiency, which the torchao
    # float8 rows (torchtitan, TORCHAO_RECIPES) fit: another implementation. Shared, the DGX
    # Cloud fp8 rows drove the torchao share to 0.18 and torchtitan held out went 7 -> 22 %.
    # Fitted only where TE fp8 runs are in the fit (costmodels/validation/loso.py); not shipped
    # (costmodels/validation/megatron_hopper_fit.py says why)
    te_fp8_cast_efficiency: float = 0.0
    # float8 rowwise GEMMs at this share of the tensorwise fp8 rate (costmodels/llm/fp8_recipes)
    rowwise_gemm_efficiency: float = 0.6
    # share of communication hidden under compute that still costs compute time: NCCL kernels
    # take SMs and HBM bandwidth from the kernels they overlap (FSDP, DP and async-TP overlap)
    overlap_interference: float = 0.1
    # the caching allocator's reserve beyond the live tensors, as a share of the dynamic memory
    # (activations, working set, communication buffers; costmodels/llm/runtime_memory.py)
    allocator_fragmentation: float = 0.1
    # the best model-FLOPs utilisation measured on the dev runs, per GPU generation, precision
    # class and framework family (costmodels/llm/mfu_ceiling.py; 0 = none): measured, not fitted
    mfu_ceiling_ampere_megatron: float = 0.0
    mfu_ceiling_hopper_megatron: float = 0.0
    mfu_ceiling_hopper_fp8_megatron: float = 0.0
    mfu_ceiling_ampere_pytorch: float = 0.0
    mfu_ceiling_hopper_pytorch: float = 0.0
    mfu_ceiling_hopper_fp8_pytorch: float = 0.0
    # k of the soft minimum of the modelled step and the step at the ceiling (mfu_ceiling.py):
    # chosen, not fitted (fitted, the refits drove it to 3-4 and it bent every run: held out,
    # vTrain went from 26 % to 42 % and DGX Cloud to 27 %); at 6 a run at 2/3 of the ceiling
    # moves by 1.4 %, one at 1/2 by 0.3 %
    mfu_saturation_order: float = 6.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (value >= 0 and value == value and value != float("inf")):
                raise ValueError(f"StepConstants.{f.name} must be finite and >= 0, got {value}")
        for name in ("gemm_sustained", "hbm_efficiency", "rowwise_gemm_efficiency",
                     "hopper_tensor_rate", "megatron_hopper_tensor_rate",
                     "fp8_cast_efficiency"):  # fmt: skip
            if not 0 < getattr(self, name) <= 10:
                raise ValueError(
                    f"StepConstants.{name} must be in (0, 10], got {getattr(self, name)}"
                )

    def tensor_rate(self, gpu_name: str, framework: str = "pytorch") -> float:
        """The sustained share of the modelled tensor-core rate on Hopper: of a PyTorch-native
        stack (``hopper_tensor_rate``) or of Megatron kernels (``megatron_hopper_tensor_rate``);
        1 on other generations."""
        from costmodels.llm.gpu_arch import gpu_arch
        from costmodels.llm.mfu_ceiling import framework_family

        if gpu_arch(gpu_name) != "hopper":
            return 1.0
        if framework_family(framework) == "pytorch":
            return self.hopper_tensor_rate
        return self.megatron_hopper_tensor_rate

    def mfu_ceiling(self, gpu_name: str, fp8: bool, framework: str) -> float:
        """The MFU ceiling of a step (costmodels/llm/mfu_ceiling.py): the best MFU measured on
        the GPU's generation and precision class by any framework family, or by the step's
        framework family on any GPU and precision, whichever is higher (0 = no such dev run)."""
        from costmodels.llm.gpu_arch import gpu_arch
        from costmodels.llm.mfu_ceiling import ceiling_field, framework_family

        gen_class = ceiling_field(gpu_arch(gpu_name), fp8, framework).rsplit("_", 1)[0]
        family = framework_family(framework)
        return max((float(getattr(self, name)) for name in MFU_CEILINGS
                    if name.rsplit("_", 1)[0] == gen_class or name.endswith(f"_{family}")),
                   default=0.0)  # fmt: skip

    def cast_efficiency(self, fp8_recipe: str) -> float:
        """The cast share of ``fp8_recipe``: torchao's (``fp8_cast_efficiency``) for
        TORCHAO_RECIPES, Transformer Engine's (``te_fp8_cast_efficiency``, where set) else."""
        own = self.te_fp8_cast_efficiency
        return own if fp8_recipe not in TORCHAO_RECIPES and own > 0 else self.fp8_cast_efficiency

    def host_seconds(self, framework: str) -> float:
        """Host time per kernel launch of ``framework``."""
        if framework == "pytorch-compile":
            return self.host_s_per_kernel * self.compiled_host_share
        return self.host_s_per_kernel

    def with_values(self, **values: float) -> StepConstants:
        return replace(self, **values)


@cache
def default_constants(path: Path = DATA, pytorch_path: Path = PYTORCH_DATA) -> StepConstants:
    """The fitted constants shipped in costmodels/data/llm-step-constants.json,
    llm-pytorch-constants.json and llm-megatron-hopper-constants.json (the last two may be
    absent while they are being fitted), with the measured MFU ceilings."""
    values = {k: float(v) for k, v in json.loads(path.read_text())["constants"].items()}
    if pytorch_path.exists():
        record = json.loads(pytorch_path.read_text())["constants"]
        values.update({k: float(v) for k, v in record.items()})
    if pytorch_path == PYTORCH_DATA:
        for extra in (CEILINGS_DATA, MEGATRON_HOPPER_DATA):
            if extra.exists():
                record = json.loads(extra.read_text())["constants"]
                values.update({k: float(v) for k, v in record.items()})
    return StepConstants(**values)
