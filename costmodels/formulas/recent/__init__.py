"""Cost models of communication techniques published after the two surveys (2024-2026).

One module per family: expert-parallel dispatch/combine (DeepEP), sequence-parallel attention
(DeepSpeed-Ulysses, Ring Attention), pipeline schedules (zero bubble, DualPipe), low-communication
training (Streaming DiLoCo) and FP8 weight all-gather. ``MODELS`` lists every CostModel here;
costmodels.formulas registers them.
"""

from costmodels.formulas._lazy import lazy_family

#: the modules of this package, in the order of ``MODELS`` (imported on first use)
FAMILIES = (
    "expert_parallel",
    "context_parallel",
    "pipeline_schedules",
    "low_communication",
    "fp8_allgather",
)
__getattr__ = lazy_family(__name__, FAMILIES, globals())
