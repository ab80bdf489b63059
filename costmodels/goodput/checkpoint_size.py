"""How many bytes one checkpoint of a training job holds, and how many the busiest writer writes.

A checkpoint keeps what training cannot recompute: the weights and the optimizer states (for
mixed-precision Adam the fp32 master weights, momentum and variance), not the gradients, which
the next step overwrites. The per-parameter bytes and the per-GPU shares come from
:mod:`costmodels.llm.memory` (``BYTES_PER_PARAM``, ``model_state_bytes``): with mixed precision
2 + 12 = 14 bytes per parameter (Rajbhandari et al., ZeRO, SC'20, K = 12).

Who writes what. Tensors replicated over the data-parallel ranks need writing once:

- by default the first data-parallel replica writes the replicated tensors (the weights, unless
  ZeRO-3 shards them; the optimizer states too without ZeRO) and every rank writes its own ZeRO
  shard, so the busiest GPU writes exactly what ``model_state_bytes`` says one GPU holds of the
  weights and optimizer states;
- ``balanced=True``: replicated tensors are split evenly over their replicas (what distributed
  checkpointing libraries can do), so each GPU of the largest pipeline stage writes
  1/dp of its stage's shard, i.e. its ZeRO-3 share.

A node writes for ``gpus_per_node`` such GPUs (an upper bound: with tp below the GPUs per node a
node also holds other data-parallel ranks, which write less by default). Cost: O(1).

>>> from costmodels.llm.presets import preset_shape
>>> from costmodels.llm.shapes import Layout
>>> size = checkpoint_size(preset_shape("Llama 3.1 8B", 8192), Layout(1, 1, 8, 8, zero=1), 8)
>>> round(size.total_bytes / 1e9)  # 8.03e9 parameters x 14 bytes
112
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costmodels.llm.memory import BYTES_PER_PARAM, model_state_bytes
from costmodels.llm.model_size import parameter_count
from costmodels.llm.shapes import Layout, TransformerShape


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one checkpoint: the job's total and what the busiest GPU and node write."""

    total_bytes: float  # unique bytes of the whole job (weights + optimizer states)
    busiest_gpu_bytes: float  # the GPU that writes most (largest pipeline stage)
    busiest_node_bytes: float  # gpus_per_node such GPUs, at most the total
    held_bytes_per_gpu: float  # weights + optimizer states one GPU of that stage holds
    gpus: int
    nodes: int
    balanced: bool


def checkpoint_size(
    shape: TransformerShape,
    layout: Layout,
    gpus_per_node: int,
    precision: str = "mixed",
    balanced: bool = False,
) -> CheckpointSize:
    """The checkpoint of ``shape`` trained with ``layout`` (module docstring: who writes what).

    ``precision`` is a key of ``costmodels.llm.memory.BYTES_PER_PARAM`` ("mixed": bf16/fp16
    weights with fp32 Adam states, 14 bytes per parameter saved; "fp32": 12).
    """
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be >= 1, got {gpus_per_node}")
    weights, _, optimizer = model_state_bytes(shape, layout, precision)
    w_bytes, _, o_bytes = BYTES_PER_PARAM[precision]
    total = float(parameter_count(shape) * (w_bytes + o_bytes))
    if balanced:
        spread_w, _, spread_o = model_state_bytes(shape, replace(layout, zero=3), precision)
        busiest = spread_w + spread_o
    else:
        busiest = weights + optimizer
    gpus = layout.gpus
    per_node = min(gpus_per_node, gpus)
    return CheckpointSize(
        total_bytes=total,
        busiest_gpu_bytes=float(busiest),
        busiest_node_bytes=float(min(per_node * busiest, total)),
        held_bytes_per_gpu=float(weights + optimizer),
        gpus=gpus,
        nodes=-(-gpus // gpus_per_node),
        balanced=balanced,
    )
