"""Training FLOPs per step and MFU / HFU (the time a GPU needs is the operator model's:
costmodels/llm/step.py and the kernel files it names).

FLOPs count matrix multiplications only (2 FLOPs per multiply-add), as Narayanan et al. do
("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
appendix); norms, softmax and element-wise work are left out. Per layer and token, the forward
pass does 2 x (q, k, v, o weights) + 4 s h (QK^T and attention over values, the full s x s
matrix as the paper counts it) + 2 x (MLP weights) x top_k; the output layer adds 2 h V.
For GPT (ffn 4h, full multi-head attention) that is 24 h^2 + 4 s h per layer and token, so:

- model FLOPs (forward + backward = 3 forwards, no recomputation):
  72 B s l h^2 (1 + s/(6h) + V/(12 l h))   (Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", appendix, Eq. 7);
- full recomputation (one more forward of every layer, not of the output layer):
  96 B s l h^2 (1 + s/(6h) + V/(16 l h))   (Narayanan et al. SC'21, Eq. 3);
- selective recomputation (attention core recomputed): Korthikanti et al.'s Eq. 8,
  72 B s l h^2 (1 + s/(3h) + V/(12 l h)), i.e. the s^2 term of the model FLOPs counted twice
  (+ 12 B s^2 h per layer). A literal count of one extra forward of QK^T and attention over
  values would add only 4 B s^2 h; we follow Eq. 8 because the paper's Table 5 HFU / MFU ratios
  (e.g. 52.8 / 51.4 for GPT-3 175B) are computed with it, and the tests check that.

B is the global batch in sequences, s the sequence length, l layers, h hidden, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.hardware import GPU
from costmodels.llm.model_size import head_dim
from costmodels.llm.shapes import Recompute, TransformerShape


@dataclass(frozen=True)
class Flops:
    """FLOPs of one training step: ``model`` without recomputation, ``hardware`` as executed."""

    model: float
    hardware: float


def _layer_forward_per_token(shape: TransformerShape) -> tuple[float, float]:
    """(dense GEMM FLOPs, attention-core FLOPs) of one layer's forward pass for one token."""
    h, f = shape.hidden, shape.ffn_size
    kv_width = shape.kv_head_count * head_dim(shape)
    projections = 2 * (2 * h * h + 2 * h * kv_width)  # q and o are h x h; k and v h x kv_width
    mlp = 2 * (3 if shape.gated_mlp else 2) * h * f * shape.top_k  # only routed experts run
    attention_core = 4 * shape.seq_len * h  # QK^T (2 s h) + attention over values (2 s h)
    return projections + mlp, attention_core


def forward_flops_per_token(shape: TransformerShape) -> float:
    """Forward FLOPs for one token through all layers and the output layer."""
    dense, core = _layer_forward_per_token(shape)
    return shape.layers * (dense + core) + 2 * shape.hidden * shape.vocab


def flops_per_step(shape: TransformerShape, global_batch: int, recompute: Recompute) -> Flops:
    """Model and hardware FLOPs of one optimizer step over ``global_batch`` sequences."""
    if global_batch < 1:
        raise ValueError(f"global_batch must be >= 1, got {global_batch}")
    tokens = global_batch * shape.seq_len
    dense, core = _layer_forward_per_token(shape)
    # Backward costs two forwards (gradients w.r.t. inputs and w.r.t. weights).
    model = 3 * tokens * forward_flops_per_token(shape)
    if recompute == "none":
        extra = 0.0
    elif recompute == "selective":
        extra = 3 * tokens * shape.layers * core  # Korthikanti Eq. 8: s^2 term counted twice
    elif recompute == "full":
        extra = tokens * shape.layers * (dense + core)  # one more forward of every layer
    else:
        raise ValueError(f"recompute must be none|selective|full, got {recompute!r}")
    return Flops(model=float(model), hardware=float(model + extra))


def peak_flops(gpu: GPU) -> float:
    """Dense bf16 tensor peak in FLOP/s (fp16 where the chip has no bf16)."""
    tflops = gpu.bf16_tflops if gpu.bf16_tflops is not None else gpu.fp16_tflops
    return tflops * 1e12


def _utilisation(flops: float, seconds: float, gpus: int, gpu: GPU) -> float:
    if seconds <= 0 or gpus < 1:
        raise ValueError(f"need seconds > 0 and gpus >= 1, got {seconds}, {gpus}")
    return flops / (seconds * gpus * peak_flops(gpu))


def mfu(model_flops: float, seconds: float, gpus: int, gpu: GPU) -> float:
    """Model FLOPs utilisation: model FLOPs per second over the peak of all ``gpus``."""
    return _utilisation(model_flops, seconds, gpus, gpu)


def hfu(hardware_flops: float, seconds: float, gpus: int, gpu: GPU) -> float:
    """Hardware FLOPs utilisation: as MFU, but counting recomputation."""
    return _utilisation(hardware_flops, seconds, gpus, gpu)
