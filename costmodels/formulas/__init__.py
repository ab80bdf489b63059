"""Closed-form cost formulas, one module per technique family; ``MODELS`` lists every one.

The registry (costmodels/registry.py, the room above) keys them by record id on first use;
nothing here imports it, so the two never import each other.
"""

from costmodels.formulas._lazy import lazy_family

#: the modules of this package, in the order of ``MODELS`` (imported on first use)
FAMILIES = (
    "ring_allreduce",
    "parameter_server",
    "topk_sparsification",
    "local_sgd",
    "collectives",
    "compression",
    "llm",
    "nccl",
    "recent",
    "goodput",
    "serving",
    "stragglers",
)
__getattr__ = lazy_family(__name__, FAMILIES, globals())
