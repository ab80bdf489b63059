"""The optimizer's update as an eager PyTorch loop runs it: one pass per parameter tensor.

Shi et al.'s runs (HKBU-HPML/ddl-benchmarks) did not all step the same optimizer. The BERT
scripts of the all-reduce methods step Adam: ``transformers.AdamW`` in horovod/ and mgwfbp/
bert_benchmark.py (BSP-A2A, WFBP-A2A and MG-WFBP all run mgwfbp/, benchmarks.py gen_cmd),
``torch.optim.Adam`` in bytescheduler/bert_benchmark.py; the parameter-server scripts
(byteps/bert_benchmark.py) step plain ``torch.optim.SGD`` (no momentum). Every ResNet-50 script
steps SGD. The single-GPU throughput each row is scaled from is one number per model, taken
here as measured with the all-reduce scripts' optimizer (Adam for BERT): an assumption, the
source does not say which script ran on one GPU.

An eager (PyTorch 1.4, pre-``foreach``) optimizer loops over the parameters in Python and
launches a few element-wise kernels per tensor; each kernel streams its operands through the
GPU's memory once. Per tensor of ``n`` fp32 values, in kernels and bytes moved:

============================  =======  ==============================================
optimizer                     kernels  bytes (read + written per value)
============================  =======  ==============================================
SGD, no momentum              1        12: p += -lr g (read p, g; write p)
Adam / AdamW (weight decay 0) 7        72: m = b1 m (8), m += (1-b1) g (12),
                                           v = b2 v (8), v += (1-b2) g g (12),
                                           d = sqrt(v) (8), d += eps (8),
                                           p += -s m / d (16)
============================  =======  ==============================================

(transformers' AdamW of 2020 and torch.optim.Adam of PyTorch 1.4 launch the same passes; Adam
divides by the bias correction in one more pass, left out.) A tensor's update takes the longer of
its kernels' host launches (``HOST_S_PER_KERNEL`` each: the CPU cannot run ahead of a loop of
dependent in-place calls by more than the queue) and its bytes at the GPU's memory bandwidth;
the step is the sum over tensors. The difference between two optimizers is what a row's measured
single-GPU step must lose or gain when its script stepped another optimizer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# (kernels, bytes moved per fp32 value) per tensor: module table
PASSES = {"sgd": (1, 12.0), "adam": (7, 72.0)}
# Host cost of one eager element-wise call from a Python loop (PyTorch 1.x: dispatch and launch);
# an assumption of this module, ~10 us, the order PyTorch's own eager-mode overhead takes.
HOST_S_PER_KERNEL = 10e-6
# Share of the nominal memory bandwidth an element-wise kernel streams at (assumption).
STREAM_FRACTION = 0.8


@dataclass(frozen=True)
class UpdateCost:
    """Seconds of one optimizer step over a model's parameter tensors."""

    optimizer: str
    seconds: float
    tensors: int


def update_seconds(
    tensor_bytes: Iterable[float], optimizer: str, memory_Bps: float
) -> UpdateCost:
    """One eager step of ``optimizer`` ("sgd" or "adam") over fp32 tensors of these sizes."""
    if optimizer not in PASSES:
        raise ValueError(f"optimizer must be one of {', '.join(PASSES)}, got {optimizer!r}")
    if not memory_Bps > 0:
        raise ValueError(f"memory_Bps must be positive, got {memory_Bps!r}")
    kernels, per_value = PASSES[optimizer]
    total, count = 0.0, 0
    for nbytes in tensor_bytes:
        values = nbytes / 4.0
        device = values * per_value / (memory_Bps * STREAM_FRACTION)
        total += max(kernels * HOST_S_PER_KERNEL, device)
        count += 1
    return UpdateCost(optimizer, total, count)


def step_change_s(
    tensor_bytes: Iterable[float], measured_with: str, ran: str, memory_Bps: float
) -> float:
    """Seconds a step measured with ``measured_with`` changes by when ``ran`` steps instead
    (negative: the run's update is cheaper)."""
    sizes = list(tensor_bytes)
    return (update_seconds(sizes, ran, memory_Bps).seconds
            - update_seconds(sizes, measured_with, memory_Bps).seconds)  # fmt: skip
