"""One GPU kernel of a training step as the operator model sees it: what it computes and moves.

Every kernel falls in one bucket of ``StepPrediction.compute_breakdown_s``: ``gemm`` (the linear
layers, the logit layer), ``attention`` (the attention core: flash kernels, or the batched
GEMMs, softmax and dropout of unfused attention) or ``memory_bound`` (norms, activations,
rotary, residual adds, casts, the loss, the embedding). How a kernel is timed follows from
what it carries: a ``gemm`` shape is timed by costmodels/llm/gemm.py, a ``flash`` pass by
costmodels/llm/attention.py, anything else as bytes over achievable HBM bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Category = Literal["gemm", "attention", "memory_bound"]
CATEGORIES: tuple[str, ...] = ("gemm", "attention", "memory_bound")


@dataclass(frozen=True)
class GemmShape:
    """C[m, n] = A[m, k] B[k, n], ``batch`` times; element sizes of inputs and output."""

    m: int
    n: int
    k: int
    batch: int = 1
    in_bytes: float = 2.0
    out_bytes: float = 2.0

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.batch

    @property
    def bytes(self) -> float:
        """Each operand read once and the result written once (the HBM lower bound)."""
        operands = (self.m * self.k + self.k * self.n) * self.in_bytes
        return float(self.batch * (operands + self.m * self.n * self.out_bytes))


@dataclass(frozen=True)
class Kernel:
    """``launches`` kernels that together do ``flops`` and move ``bytes`` (HBM reads + writes)."""

    name: str
    category: Category
    flops: float = 0.0
    bytes: float = 0.0
    gemm: GemmShape | None = None
    dtype: str = "bf16"  # tensor-core input type of a GEMM or flash pass
    flash: Literal["fwd", "bwd"] | None = None
    flash_blocks: int = 0  # thread blocks of a flash pass (batch x heads x query tiles)
    launches: int = 1
    flash_version: int = 3  # FlashAttention-3-class kernels on Hopper (2: FA2, PyTorch SDPA)
    # a flash pass's shape for its published rate (costmodels/llm/attention_rates.py): keys,
    # head width (mean of query/key and value widths), causal mask; and the kernel a
    # recipe names ("": the framework's flash generation)
    flash_seq: int = 0
    head_dim: float = 0.0
    causal: bool = True
    attention_kernel: str = ""


def gemm_kernel(name: str, category: Category, shape: GemmShape, dtype: str) -> Kernel:
    return Kernel(name, category, shape.flops, shape.bytes, gemm=shape, dtype=dtype)


def memory_kernel(name: str, n_bytes: float, launches: int = 1) -> Kernel:
    return Kernel(name, "memory_bound", 0.0, float(n_bytes), launches=launches)
