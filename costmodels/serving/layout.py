"""How one serving instance is laid out: TP x PP (x EP for MoE), precisions, CUDA graphs.

Ranks are numbered TP-innermost, then attention data-parallel groups, then pipeline stages.

* ``tp``: Megatron tensor parallelism inside each layer (Shoeybi et al. 2019, arXiv:1909.08053),
  as vLLM and TensorRT-LLM run it: column-parallel QKV and MLP-in, row-parallel attention-out
  and MLP-out, one all-reduce after each of the two row-parallel GEMMs.
* ``pp``: ``ceil(layers / pp)`` layers on the busiest stage; a decode batch is cut into up to
  ``pp`` micro-batches that follow each other through the stages.
* ``ep`` (MoE only): ``ep = 1`` shards every expert over the TP group (vLLM's default). ``ep > 1``
  is the DeepSeek-V3 inference layout (DeepSeek-AI, arXiv:2412.19437, Sec. 3.4; SGLang's DP
  attention, vLLM's ``--enable-expert-parallel`` with data parallelism): ``ep / tp`` attention
  groups of ``tp`` GPUs each serve their own requests, every GPU holds ``experts / ep`` whole
  experts, and tokens reach their experts by an all-to-all dispatch and return by a combine.
  ``ep`` must be a multiple of ``tp``; the instance has ``pp x max(tp, ep)`` GPUs.
* ``precision``: weights and GEMMs in bf16/fp16 (2 bytes), fp8 (1 byte, E4M3 weights with
  per-tensor scales, GEMMs at the fp8 tensor-core peak) or fp4 (NVFP4, 0.5625 bytes with its
  block scales, at the FP4 peak; costmodels.serving.precision); embedding and head stay 16-bit.
  ``kv_precision``: bytes per key/value element in the cache (fp8 halves the cache).
* ``cuda_graphs``: the decode (and prefill) kernels are replayed from a captured graph or a C++
  runtime (vLLM, TensorRT-LLM), so the host adds no time per kernel; ``False`` prices every
  launch at the training model's fitted eager host cost (costmodels/llm/constants.py).
* ``custom_allreduce``: the engine runs TP all-reduces inside a node with its own kernel instead
  of NCCL/RCCL (vLLM, SGLang, TensorRT-LLM all do by default; priced on ROCm only,
  costmodels.serving.rocm).
* ``ep_backend``: how tokens reach their experts when ep > 1: ``alltoall`` (the engines'
  default collectives) or ``deepep`` (DeepEP's kernels; costmodels.serving.ep_exchange).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.limits import MAX_GPUS, check_count
from costmodels.llm.mamba import check_tp
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.precision import WEIGHT_BYTES, check_serving_precision

KV_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8")
# the EP token exchange (--moe-a2a-backend, issue 39): the engines' default collectives, or
# DeepEP's kernels (costmodels.serving.ep_exchange)
EP_BACKENDS: tuple[str, ...] = ("alltoall", "deepep")
KV_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}
# GPUs of one instance: far above any published deployment (DeepSeek-V3 decodes on 320), and
# low enough that placing its groups (O(GPUs)) stays instant
MAX_INSTANCE_GPUS = 65_536


class ServingLayoutError(ValueError):
    """A layout the model cannot run; the message names the flag."""


@dataclass(frozen=True)
class ServingLayout:
    """One serving instance (a prefill or a decode instance of disaggregated serving)."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    precision: str = "bf16"
    kv_precision: str = "bf16"
    cuda_graphs: bool = True
    custom_allreduce: bool = False  # the engine's own TP all-reduce (costmodels.serving.rocm)
    ep_backend: str = "alltoall"  # the EP exchange (costmodels.serving.ep_exchange)

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep"):
            try:
                check_count(getattr(self, name), f"--{name}", MAX_GPUS)
            except ValueError as exc:
                raise ServingLayoutError(str(exc)) from None
        try:
            check_serving_precision(self.precision)
        except ValueError as exc:
            raise ServingLayoutError(f"--precision: {exc}") from None
        if self.kv_precision not in KV_PRECISIONS:
            raise ServingLayoutError(
                f"--kv-precision must be one of {list(KV_PRECISIONS)}, got {self.kv_precision!r}"
            )
        if self.ep_backend not in EP_BACKENDS:
            raise ServingLayoutError(f"--moe-a2a-backend must be one of {list(EP_BACKENDS)}, "
                                     f"got {self.ep_backend!r}")  # fmt: skip
        if self.ep > 1 and self.ep % self.tp:
            raise ServingLayoutError(
                f"--ep {self.ep} must be a multiple of --tp {self.tp} (ep / tp attention groups "
                "of tp GPUs share the experts)"
            )

    @property
    def groups(self) -> int:
        """Attention data-parallel groups of ``tp`` GPUs per stage (1 unless ep > tp)."""
        return self.ep // self.tp if self.ep > 1 else 1

    @property
    def gpus_per_stage(self) -> int:
        return self.tp * self.groups

    @property
    def gpus(self) -> int:
        return self.gpus_per_stage * self.pp

    @property
    def weight_bytes(self) -> float:
        """Bytes per weight of the linear layers (NVFP4: 0.5625, with its block scales)."""
        return WEIGHT_BYTES[self.precision]

    @property
    def kv_bytes(self) -> int:
        return KV_BYTES[self.kv_precision]


def check_priced(shape: TransformerShape) -> None:
    """ServingLayoutError for a model the serving model cannot price: a hybrid model without
    attention layers (the paged pool counts tokens of the attention layers' cache; issue 39
    prices Mamba-2 layers beside attention, costmodels.serving.hybrid)."""
    if shape.hybrid_pattern and "*" not in shape.hybrid_pattern:
        raise ServingLayoutError(
            "--model / --hf-config: a hybrid model without attention layers (no '*' in its layer "
            "pattern) keeps no KV cache; the serving model sizes its pool by attention tokens"
        )


def check_layout(shape: TransformerShape, layout: ServingLayout, gpus_per_node: int) -> None:
    """ServingLayoutError naming the flag when ``shape`` cannot be split as ``layout`` says."""
    check_priced(shape)
    if layout.gpus > MAX_INSTANCE_GPUS:
        raise ServingLayoutError(
            f"--tp x --pp (x --ep / --tp) makes an instance of {layout.gpus:,} GPUs; at most "
            f"{MAX_INSTANCE_GPUS:,}"
        )
    if shape.heads % layout.tp:
        raise ServingLayoutError(f"--tp {layout.tp} does not divide the {shape.heads} heads")
    if shape.mamba is not None:  # Mamba-2 heads and groups split over TP (issue 39)
        try:
            check_tp(shape.mamba, layout.tp)
        except ValueError as exc:
            raise ServingLayoutError(str(exc)) from None
    if layout.tp > gpus_per_node:
        raise ServingLayoutError(
            f"--tp {layout.tp} is more than --gpus-per-node {gpus_per_node}: tensor parallelism "
            "stays inside a node"
        )
    if layout.pp > shape.layers:
        raise ServingLayoutError(f"--pp {layout.pp} is more than the {shape.layers} layers")
    if layout.ep > 1:
        if shape.experts == 1:
            raise ServingLayoutError("--ep needs a mixture-of-experts model (--experts > 1)")
        if shape.experts % layout.ep:
            raise ServingLayoutError(
                f"--ep {layout.ep} does not divide the {shape.experts} experts"
            )


def layers_on_busiest_stage(shape: TransformerShape, layout: ServingLayout) -> int:
    return math.ceil(shape.layers / layout.pp)
