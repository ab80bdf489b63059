"""DESIGN.md's invariants on the links between records, cost models and reference code.

- every cost_model and reference_impl a record names resolves (also covered by validate);
- every registered cost model and every registered reference implementation is named by exactly
  one record: no orphans, no double claims.
The bytes-on-the-wire invariant lives beside each implementation's tests
(tests/reference_impls/), where the processes already run.
"""

from __future__ import annotations

from collections import Counter

import costmodels
from reference_impls.registry import registered
from taxonomy import load_taxonomy

RECORDS = load_taxonomy().records.values()


def test_every_cost_model_is_named_by_exactly_one_record() -> None:
    named = Counter(r.cost_model for r in RECORDS if r.cost_model)
    assert set(named) == set(costmodels.ids())
    assert all(count == 1 for count in named.values()), named


def test_every_reference_impl_is_named_by_exactly_one_record() -> None:
    named = Counter(r.reference_impl for r in RECORDS if r.reference_impl)
    assert set(named) == registered()
    assert all(count == 1 for count in named.values()), named


def test_cost_model_ids_equal_their_record_ids() -> None:
    for record in RECORDS:
        if record.cost_model:
            assert record.cost_model == record.id
            assert costmodels.get(record.cost_model).id == record.id
