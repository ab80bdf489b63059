"""Survey A's placement rule as code: which records get a slot in Shi et al.'s taxonomy.

Survey A (Shi et al., IEEE Network 2021) surveys "communication optimization techniques for data
parallel distributed DL" (its abstract). The rule, in words, is in :mod:`taxonomy.schema`'s
docstring; here it is decided from what a record states about itself:

1. whose traffic it changes: ``properties.parallel_traffic`` where given, else the first
   element of its category path that names a model-parallel dimension (``CATEGORY_TRAFFIC``),
   else data-parallel;
2. whether it is a communication technique of training at all: a category element in
   ``OUTSIDE_AREAS`` (serving, cluster scheduling, fault tolerance, performance modelling,
   whole training systems, KV-cache transfer) puts it outside.

A record inside the scope needs an ``A`` slot; one outside must have ``A: null``.
:func:`survey_a_problem` returns why a record breaks the rule, and the loader reports it, so
``commatlas validate`` fails on a record placed against the rule.
"""

from __future__ import annotations

from taxonomy.schema import Record

# Category elements that name a model-parallel dimension, and the traffic they stand for.
CATEGORY_TRAFFIC = {
    "tensor": "tensor",
    "pipeline": "pipeline",
    "expert": "expert",
    "sequence": "sequence",
    "auto-parallel": "hybrid",  # searches over data and model parallelism together
    "tensor-parallel-overlap": "tensor",
}
# Category elements of areas that are not data-parallel communication techniques.
OUTSIDE_AREAS = {
    "inference-serving": "inference serving",
    "cluster-scheduling": "cluster and job scheduling",
    "fault-tolerance": "fault tolerance and checkpointing",
    "performance-modelling": "performance modelling and simulation",
    "llm-training-system": "a whole large-model training system or run",
    "key-value-transfer": "moving inference KV caches",
}


def traffic(record: Record) -> str:
    """Whose traffic the record changes: data, tensor, pipeline, expert, sequence or hybrid."""
    if record.properties.parallel_traffic is not None:
        return record.properties.parallel_traffic
    for element in record.category:
        if element in CATEGORY_TRAFFIC:
            return CATEGORY_TRAFFIC[element]
    return "data"


def outside_reason(record: Record) -> str | None:
    """Why survey A has no slot for the record, or None when it is in its data-parallel scope."""
    kind = traffic(record)
    if kind != "data":
        return f"it changes {kind}-parallel traffic"
    for element in record.category:
        if element in OUTSIDE_AREAS:
            return f"it is about {OUTSIDE_AREAS[element]}"
    return None


def survey_a_problem(record: Record) -> str | None:
    """Why the record's survey-A placement breaks the rule (module docstring), or None."""
    reason = outside_reason(record)
    if reason is not None and record.placement.A is not None:
        return (
            f"survey A covers data-parallel communication only and {reason}: set A to null "
            "(or properties.parallel_traffic to data if it changes data-parallel traffic)"
        )
    if reason is None and record.placement.A is None:
        return (
            "the record changes data-parallel communication, which survey A covers: give it the "
            "slot it would occupy (mentioned.A says whether the survey discusses it), or set "
            "properties.parallel_traffic if it changes model-parallel traffic"
        )
    return None
