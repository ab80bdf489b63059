"""Cost models of communication techniques published after the two surveys (2024-2026).

One module per family: expert-parallel dispatch/combine (DeepEP), sequence-parallel attention
(DeepSpeed-Ulysses, Ring Attention), pipeline schedules (zero bubble, DualPipe), low-communication
training (Streaming DiLoCo) and FP8 weight all-gather. ``MODELS`` lists every CostModel here;
costmodels.formulas registers them.
"""

from costmodels.formulas.recent import (
    context_parallel,
    expert_parallel,
    fp8_allgather,
    low_communication,
    pipeline_schedules,
)
from costmodels.model import CostModel

MODELS: list[CostModel] = [
    *expert_parallel.MODELS,
    *context_parallel.MODELS,
    *pipeline_schedules.MODELS,
    *low_communication.MODELS,
    *fp8_allgather.MODELS,
]
