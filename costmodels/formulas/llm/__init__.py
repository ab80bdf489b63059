"""Closed-form pieces of large-model training: TP/SP activations, pipeline overhead, ZeRO/FSDP.

``MODELS`` lists every CostModel here; costmodels.formulas registers them. The full step model
(costmodels/llm/) combines these with FLOPs, memory and placement.
"""

from costmodels.formulas._lazy import lazy_family

#: the modules of this package, in the order of ``MODELS`` (imported on first use)
FAMILIES = (
    "tensor_parallel",
    "pipeline",
    "sharded_data_parallel",
)
__getattr__ = lazy_family(__name__, FAMILIES, globals())
