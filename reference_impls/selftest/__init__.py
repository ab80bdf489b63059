"""Check every reference implementation against ``torch.distributed`` on the machines at hand.

Run it under ``torchrun`` on a laptop or a cluster (it reads RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT from the environment; without them it runs as one process)::

    torchrun --standalone --nproc-per-node=4 -m reference_impls.selftest            # CPU, gloo
    torchrun --nnodes=2 --nproc-per-node=8 ... -m reference_impls.selftest --device cuda  # NCCL

Rank 0 prints a table (method, check, result, max error, seconds); the exit code is 1 if any
check failed on any rank. Every check catches its own exception and is reported, the others still
run; each runs on a fresh process group with ``--timeout`` seconds per collective, so nothing
waits forever. ``--only ring_allreduce,qsgd`` runs a subset (fnmatch patterns on the method).
``--inject-failure PATTERN`` is a testing aid: the named methods' checks get a wrong value on the
last rank, which must show up as FAIL (and exit code 1) while the rest pass. ``--list`` prints
the checks without running them.

Adding a check is adding a function to a list: a :class:`~reference_impls.selftest.core.Check`
to ``CHECKS`` in the family's module (or a line to ``SPECS`` / ``CONFIG`` for collectives and
compressors, which are discovered from ``collectives.__all__`` and ``compression.available()``);
a new family is a module with ``checks()`` added to :data:`FAMILIES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_impls.selftest.core import Check

#: modules under reference_impls.selftest whose checks() lists the checks, in table order
FAMILIES: list[str] = [
    "collectives",
    "compression",
    "adapters",
    "parameter_server",
    "optimizers",
    "scheduling",
    "parallel",
    "sequence",
]


def all_checks() -> list[Check]:
    """Every family's checks, in table order (built without a process group)."""
    out: list[Check] = []
    for family in FAMILIES:
        module = importlib.import_module(f"reference_impls.selftest.{family}")
        make: Callable[[], list[Check]] = module.checks
        out.extend(make())
    return out


def __getattr__(name: str) -> Any:
    """Check, CheckContext, CheckFailed, Skip load torch: import them on first use, so that
    ``python -m reference_impls.selftest`` can refuse a bad launch before torch loads."""
    if name in ("Check", "CheckContext", "CheckFailed", "Skip"):
        return getattr(importlib.import_module("reference_impls.selftest.core"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FAMILIES", "Check", "CheckContext", "CheckFailed", "Skip", "all_checks"]
