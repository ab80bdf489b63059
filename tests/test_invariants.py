"""DESIGN.md's invariants on the links between records, cost models and reference code.

- every cost_model and reference_impl a record names resolves (also covered by validate);
- every registered cost model and every registered reference implementation is named by exactly
  one record: no orphans, no double claims.
The bytes-on-the-wire invariant lives beside each implementation's tests
(tests/reference_impls/), where the processes already run; its latency twin (messages per rank
and latency rounds equal a variant's alpha coefficient, for every modelled implementation) is
tests/reference_impls/test_message_counts.py.
"""

from __future__ import annotations

from collections import Counter

import costmodels
from reference_impls.entry_points import entries, registered
from taxonomy import load_taxonomy

RECORDS = load_taxonomy().records.values()


def test_every_cost_model_is_named_by_exactly_one_record() -> None:
    named = Counter(r.cost_model for r in RECORDS if r.cost_model)
    assert set(named) == set(costmodels.ids())
    assert all(count == 1 for count in named.values()), named


def test_every_reference_impl_is_named_by_exactly_one_record() -> None:
    named = Counter(r.reference_impl for r in RECORDS if r.reference_impl)
    assert all(count == 1 for count in named.values()), named
    assert set(named) <= registered(), set(named) - registered()
    by_id = {r.id: r for r in RECORDS}
    for target, entry in entries().items():
        if target in named:
            owner = next(r for r in RECORDS if r.reference_impl == target)
            assert entry.record in (None, owner.id), (target, entry.record, owner.id)
            continue
        # Not a record's primary entry point: it must declare a record that has one.
        assert entry.record in by_id, f"{target} is named by no record and declares none"
        assert by_id[entry.record].reference_impl, f"{entry.record} has no primary impl"


def test_declared_variants_exist_in_the_cost_model() -> None:
    by_id = {r.id: r for r in RECORDS}
    for target, entry in entries().items():
        record_id = entry.record or next(r.id for r in RECORDS if r.reference_impl == target)
        model_id = by_id[record_id].cost_model
        if entry.variant is not None:
            assert model_id, f"{target} declares {entry.variant} but {record_id} has no model"
            assert entry.variant in costmodels.get(model_id).variants, (target, entry.variant)


def test_cost_model_ids_equal_their_record_ids() -> None:
    for record in RECORDS:
        if record.cost_model:
            assert record.cost_model == record.id
            assert costmodels.get(record.cost_model).id == record.id
