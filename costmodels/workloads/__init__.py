"""Named workloads: every model's gradient tensors, computed from its architecture, with
measured H200 ready times where the project has them.

Example::

    >>> from costmodels.workloads import get_workload
    >>> get_workload("resnet50").params
    25557032
"""

from __future__ import annotations

from costmodels.units import UnitParseError, parse_count
from costmodels.workloads.base import MeasuredProfile, Tensor, Workload
from costmodels.workloads.catalog import get_workload, workload_names

# Display name -> total parameters (the calculator's workload menu).
NAMED_WORKLOADS: dict[str, int] = {name: get_workload(name).params for name in workload_names()}


def parameter_count(workload: str) -> float:
    """A named workload's parameter count (name or alias), or a count string like '25M'."""
    try:
        return float(get_workload(workload).params)
    except ValueError:
        pass
    try:
        return parse_count(workload, what="workload")
    except UnitParseError:
        raise UnitParseError(
            f"workload: {workload!r} is neither a named workload ({', '.join(NAMED_WORKLOADS)}) "
            "nor a parameter count like '25M'"
        ) from None


__all__ = [
    "NAMED_WORKLOADS",
    "MeasuredProfile",
    "Tensor",
    "Workload",
    "get_workload",
    "parameter_count",
    "workload_names",
]
