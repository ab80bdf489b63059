"""Collectives over point-to-point sends, with ``torch.distributed`` semantics.

Every byte goes through :mod:`reference_impls.comm.wire`, so tests can hold the bytes each rank
sends against the cost models. All-reduces sum in place like ``dist.all_reduce``.
"""

from reference_impls.collectives.alltoall import pairwise_alltoall
from reference_impls.collectives.broadcast import binomial_broadcast
from reference_impls.collectives.double_binary_tree import double_binary_tree_allreduce
from reference_impls.collectives.halving_doubling import halving_doubling_allreduce
from reference_impls.collectives.hierarchical import hierarchical_allreduce
from reference_impls.collectives.recursive_doubling import recursive_doubling_allreduce
from reference_impls.collectives.ring import ring_allgather, ring_allreduce, ring_reduce_scatter
from reference_impls.collectives.torus2d import torus2d_allreduce
from reference_impls.collectives.tree import tree_allreduce

__all__ = [
    "binomial_broadcast",
    "double_binary_tree_allreduce",
    "halving_doubling_allreduce",
    "hierarchical_allreduce",
    "pairwise_alltoall",
    "recursive_doubling_allreduce",
    "ring_allgather",
    "ring_allreduce",
    "ring_reduce_scatter",
    "torus2d_allreduce",
    "tree_allreduce",
]
