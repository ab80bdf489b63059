"""Collectives over point-to-point sends, with ``torch.distributed`` semantics."""

from reference_impls.collectives.ring import ring_allgather, ring_allreduce

__all__ = ["ring_allgather", "ring_allreduce"]
