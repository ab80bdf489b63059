"""One entry point for all-reduce times by algorithm name, and nccl-tests' bus-bandwidth factors.

Example::

    >>> float(allreduce_time("ring", p=4, n=4e6, alpha=5e-6, beta=1e-10, gamma=0))
    0.00063
    >>> float(bus_bandwidth_factor("all-reduce", 8))
    1.75
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costmodels.registry import get

# Algorithm name -> (cost-model id, variant). The ids are taxonomy record ids.
ALLREDUCE_ALGORITHMS: dict[str, tuple[str, str]] = {
    "ring": ("ring-allreduce", "ring"),
    "tree": ("tree-allreduce", "binary-tree"),
    "double-binary-tree": ("tree-allreduce", "double-binary-tree"),
    "recursive-doubling": ("recursive-halving-doubling", "recursive-doubling"),
    "halving-doubling": ("recursive-halving-doubling", "halving-doubling"),
    "hierarchical": ("hierarchical-allreduce", "reduce-scatter-ring"),
    "torus2d": ("2d-torus-allreduce", "ring-phases"),
    "in-network": ("sharp", "pipelined"),
}


def allreduce_time(algorithm: str, **values: Any) -> np.ndarray:
    """Seconds for one all-reduce with ``algorithm`` (a key of ``ALLREDUCE_ALGORITHMS``).

    ``values`` are SI numbers or numpy arrays for the model's symbols (p, n, alpha, beta, gamma;
    g, alpha_intra, beta_intra for the hierarchical ones); extra symbols are ignored, so one
    dict of cluster parameters serves every algorithm.
    """
    try:
        model_id, variant = ALLREDUCE_ALGORITHMS[algorithm]
    except KeyError:
        raise ValueError(
            f"unknown all-reduce algorithm {algorithm!r}; choose from {list(ALLREDUCE_ALGORITHMS)}"
        ) from None
    return get(model_id).evaluate(variant, **values)


# nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md): busbw = algbw * factor, so that a
# bandwidth-bound collective's bus bandwidth equals the link bandwidth whatever p is.
_BUS_FACTORS = {
    "all-reduce": lambda p: 2 * (p - 1) / p,
    "reduce-scatter": lambda p: (p - 1) / p,
    "all-gather": lambda p: (p - 1) / p,
    "all-to-all": lambda p: (p - 1) / p,
    "broadcast": lambda p: np.ones_like(p),
    "reduce": lambda p: np.ones_like(p),
}


def _canonical(collective: str) -> str:
    # Accept "allreduce", "all_reduce", "AllReduce", "alltoall" ... for "all-reduce" etc.
    plain = collective.lower().replace("_", "").replace("-", "")
    for name in _BUS_FACTORS:
        if name.replace("-", "") == plain:
            return name
    raise ValueError(f"unknown collective {collective!r}; choose from {list(_BUS_FACTORS)}")


def bus_bandwidth_factor(collective: str, p: Any) -> np.ndarray:
    """nccl-tests' correction factor from algorithm bandwidth to bus bandwidth for p ranks."""
    ranks = np.asarray(p, dtype=float)
    if np.any(ranks < 1):
        raise ValueError("p must be at least 1")
    return np.asarray(_BUS_FACTORS[_canonical(collective)](ranks), dtype=float)
