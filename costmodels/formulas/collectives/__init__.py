"""Collective-communication cost models (alpha-beta-gamma), one module per record.

``MODELS`` lists every CostModel defined in this package; costmodels.formulas registers them.
"""

from costmodels.formulas._lazy import lazy_family

#: the modules of this package, in the order of ``MODELS`` (imported on first use)
FAMILIES = (
    "tree_allreduce",
    "recursive_halving_doubling",
    "hierarchical_allreduce",
    "torus_2d_allreduce",
    "sharp",
    "byteps",
    "allgather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "alltoall",
)
__getattr__ = lazy_family(__name__, FAMILIES, globals())
