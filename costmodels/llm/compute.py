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

Generalised per layer kind (costmodels/llm/layer_kinds.py): the linear GEMMs of
costmodels/llm/linear_shapes.py per token (MLA's five projections; a MoE layer's router, its
top_k routed experts and its shared experts), the attention core 2 s heads (d_qk + d_v) (= 4 s h
for multi-head attention with d = h / heads). Recomputation beyond the three above: ``full``
on one layer in ``recompute_every`` re-runs that share of the forward; ``op`` (torchtitan's
per-op policy) re-runs every second matmul (linear_shapes.op_recompute_share), not the
attention core.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from costmodels.hardware import GPU
from costmodels.llm.layer_kinds import (
    Kind,
    attended_keys,
    model_counts,
    mtp_counts,
    query_width,
    value_width,
)
from costmodels.llm.linear_shapes import attention_linears, mlp_linears, op_recompute_share
from costmodels.llm.mamba import mamba_flops_per_token, ssd_flops_per_token
from costmodels.llm.shapes import Recompute, TransformerShape


@dataclass(frozen=True)
class Flops:
    """FLOPs of one training step: ``model`` without recomputation, ``hardware`` as executed."""

    model: float
    hardware: float


@lru_cache(maxsize=4096)
def _linear_flops(shape: TransformerShape, moe: Kind, recomputed: bool = False) -> float:
    """Forward FLOPs of one token's linear GEMMs in one layer (or their ``op``-recomputed
    share). Routed experts run top_k times per token, shared experts once. A hybrid layer
    (issue 39) has only its own mixer's: attention (*), an MLP (-, E) or a Mamba-2 mixer (M,
    priced whole in ``_layer_forward_per_token``)."""
    total = 0.0
    if moe == "M":
        return 0.0
    for x in attention_linears(shape, 1, 1) if moe in (False, True, "*") else ():
        total += 2.0 * x.n * x.k * (op_recompute_share(x.name, shape) if recomputed else 1.0)
    for x in mlp_linears(shape, 1, 1, 1, moe in (True, "E")) if moe != "*" else ():
        per_token = 2.0 * x.n * x.k
        if x.name.startswith("expert"):
            per_token *= shape.top_k  # batch = experts, one token each: count top_k of them
        total += per_token * (op_recompute_share(x.name, shape) if recomputed else 1.0)
    return total


def _layer_forward_per_token(shape: TransformerShape, moe: Kind) -> tuple[float, float]:
    """(dense GEMM FLOPs, attention-core FLOPs) of one layer's forward pass for one token; a
    Mamba-2 layer's in/out projections and its SSD scan (costmodels/llm/mamba.py) likewise."""
    if moe == "M":
        assert shape.mamba is not None  # TransformerShape holds it
        ssd = ssd_flops_per_token(shape.mamba)
        return mamba_flops_per_token(shape.mamba, shape.hidden) - ssd, ssd
    if moe in ("-", "E"):
        return _linear_flops(shape, moe), 0.0
    # QK^T and PV over the keys a query attends to (s; the window on sliding layers, issue 39)
    core = 2.0 * attended_keys(shape) * (query_width(shape) + value_width(shape))
    return _linear_flops(shape, moe), core


def _kinds(shape: TransformerShape) -> list[tuple[int, Kind]]:
    """(layers, kind) of the model, its multi-token-prediction blocks included."""
    kinds = dict(model_counts(shape).items())
    for kind, n in mtp_counts(shape).items():
        kinds[kind] = kinds.get(kind, 0) + n
    return [(n, kind) for kind, n in kinds.items()]


@lru_cache(maxsize=4096)
def forward_flops_per_token(shape: TransformerShape) -> float:
    """Forward FLOPs for one token through all layers and the output layer. Multi-token
    prediction (issue 39) adds per depth its block (in ``_kinds``), the 2h -> h projection
    (2 x 2h x h) and another output layer, as Megatron-LM's ``num_floating_point_operations``
    counts them (training.py: "MTP norms and proj", "MTP + final logit")."""
    layers = sum(n * sum(_layer_forward_per_token(shape, moe)) for n, moe in _kinds(shape))
    h = shape.hidden
    return layers + 2 * h * shape.vocab * (1 + shape.mtp) + shape.mtp * 2 * (2 * h * h)


@lru_cache(maxsize=4096)
def flops_per_step(shape: TransformerShape, global_batch: int, recompute: Recompute,
                   recompute_every: int = 1) -> Flops:  # fmt: skip
    """Model and hardware FLOPs of one optimizer step over ``global_batch`` sequences."""
    if global_batch < 1:
        raise ValueError(f"global_batch must be >= 1, got {global_batch}")
    tokens = global_batch * shape.seq_len
    # Backward costs two forwards (gradients w.r.t. inputs and w.r.t. weights).
    model = 3 * tokens * forward_flops_per_token(shape)
    kinds = _kinds(shape)
    # selective recomputation re-runs the attention core, not a Mamba-2 layer's scan
    core = sum(n * _layer_forward_per_token(shape, moe)[1] for n, moe in kinds if moe != "M")
    if recompute == "none":
        extra = 0.0
    elif recompute == "selective":
        extra = 3 * tokens * core  # Korthikanti Eq. 8: s^2 term counted twice
    elif recompute == "full":
        forward = sum(n * sum(_layer_forward_per_token(shape, moe)) for n, moe in kinds)
        extra = tokens * forward / recompute_every  # one more forward of every k-th layer
    elif recompute == "op":
        extra = tokens * sum(n * _linear_flops(shape, moe, recomputed=True) for n, moe in kinds)
    else:
        raise ValueError(f"recompute must be none|selective|op|full, got {recompute!r}")
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
