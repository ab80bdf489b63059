"""Collective-communication cost models (alpha-beta-gamma), one module per record.

``MODELS`` lists every CostModel defined in this package; costmodels.formulas registers them.
"""

from costmodels.formulas.collectives import (
    allgather,
    alltoall,
    broadcast,
    byteps,
    hierarchical_allreduce,
    recursive_halving_doubling,
    reduce,
    reduce_scatter,
    sharp,
    torus_2d_allreduce,
    tree_allreduce,
)
from costmodels.model import CostModel

MODELS: list[CostModel] = [
    tree_allreduce.MODEL,
    recursive_halving_doubling.MODEL,
    hierarchical_allreduce.MODEL,
    torus_2d_allreduce.MODEL,
    sharp.MODEL,
    byteps.MODEL,
    allgather.MODEL,
    reduce_scatter.MODEL,
    broadcast.MODEL,
    reduce.MODEL,
    alltoall.MODEL,
]
